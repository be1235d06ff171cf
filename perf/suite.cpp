#include <dlf/error.h>
#include <dlf/perf/suite.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <ctime>
#include <fstream>
#include <sstream>

#include "core/json.h"
#include "perf/process.h"

namespace dlf::perf {
namespace {

// A training step of suite_train_bench (its name says what: bench/train_case.h).
// `peer`: the peer's model and batch for the same work (shared/peer/run.sh's arguments).
SuiteCase train(std::string name, Tier tier = Tier::quick, std::vector<std::string> peer = {}) {
  return {.name = std::move(name),
          .tier = tier,
          .reps = tier == Tier::quick ? 6 : 3,
          .program = "suite_train_bench",
          .peer = std::move(peer)};
}

// A collective of suite_comm_bench (bench/comm_case.h) on 2 ranks: threads of one process, or
// with `mpi` processes under mpirun. Timed on the wall clock (2 threads): a collective's time
// is also its wait for the other rank.
SuiteCase collective(std::string name, Tier tier = Tier::quick, bool mpi = false) {
  return {.name = std::move(name),
          .tier = tier,
          .threads = 2,
          .program = "suite_comm_bench",
          .mpi_ranks = mpi ? 2 : 0};
}

// A generation of suite_generate_bench: new tokens a second of a prompt's continuation.
SuiteCase generation(std::string name, Tier tier = Tier::quick) {
  return {.name = std::move(name), .tier = tier, .reps = 5, .program = "suite_generate_bench"};
}

std::vector<SuiteCase> all_cases() {
  const Tier full = Tier::full;
  return {
      {.name = "peak matmul f32 M1024 K1024 N1024", .reps = 5, .peak = true},
      {.name = "peak matmul bf16 M1024 K1024 N1024", .reps = 5, .peak = true},
      {.name = "peak bandwidth copy 64 MiB", .reps = 5, .peak = true},
      {.name = "dispatch add f32 [16]"},
      {.name = "matmul f32 M512 K512 N512"},
      {.name = "add f32 [8,64,32,32]"},
      {.name = "group_norm forward f32 [8,64,32,32] g32"},
      {.name = "silu forward+backward f32 [8,64,32,32]"},
      {.name = "conv2d forward f32 [8,64,32,32] 64->64 3x3"},
      {.name = "train unet-tiny fp32 batch 8", .reps = 6},
      {.name = "train gpt-nano fp32 batch 8x64",
       .reps = 6,
       .peer = {"gpt-nano", "--batch", "8", "--seq", "64"}},
      train("train unet-tiny bf16 batch 8"),
      train("train unet-tiny fp32 compiled batch 8"),
      train("train unet-tiny fp32 recompute batch 8"),
      train("train gpt-nano bf16 batch 8x64"),
      train("train gpt-nano fp32 compiled batch 8x64"),
      train("train gpt-nano fp32 recompute batch 8x64"),
      train("train bert-tiny fp32 batch 4x64"),
      train("train bert-tiny bf16 batch 4x64"),
      train("train bert-tiny fp32 compiled batch 4x64"),
      train("train bert-tiny fp32 recompute batch 4x64"),
      train("train vit-tiny fp32 batch 4"),
      train("train vit-tiny bf16 batch 4"),
      train("train vit-tiny fp32 compiled batch 4"),
      train("train vit-tiny fp32 recompute batch 4"),
      collective("allreduce f32 4 KiB 2 ranks in-process"),
      collective("allreduce f32 16 MiB 2 ranks in-process"),
      collective("allgather f32 4 KiB 2 ranks in-process"),
      collective("allgather f32 16 MiB 2 ranks in-process"),
      collective("reduce_scatter f32 4 KiB 2 ranks in-process"),
      collective("reduce_scatter f32 16 MiB 2 ranks in-process"),
      generation("generate gpt-nano kv-cache batch 1 tokens 32"),
      collective("allreduce f32 4 KiB 2 ranks mpi", Tier::quick, true),
      collective("allreduce f32 16 MiB 2 ranks mpi", Tier::quick, true),
      {.name = "matmul bf16 M512 K512 N512", .tier = full},
      {.name = "layer_norm forward f32 [2048,768]", .tier = full},
      {.name = "softmax f32 [512,1024]", .tier = full},
      {.name = "train gpt-mini fp32 batch 4x128",
       .tier = full,
       .reps = 5,
       .peer = {"gpt-mini", "--batch", "4", "--seq", "128"}},
      {.name = "train gpt-mini fp32 recompute batch 4x128", .tier = full, .reps = 5},
      train("train gpt-mini bf16 batch 4x128", full),
      train("train gpt-mini fp32 compiled batch 4x128", full),
      train("train bert-mini fp32 batch 8x128", full,
            {"bert-mini", "--batch", "8", "--seq", "128"}),
      train("train bert-mini bf16 batch 8x128", full),
      train("train bert-mini fp32 compiled batch 8x128", full),
      train("train bert-mini fp32 recompute batch 8x128", full),
      train("train vit-tiny fp32 batch 16", full, {"vit-tiny", "--batch", "16"}),
      train("train vit-tiny bf16 batch 16", full),
      train("train vit-tiny fp32 compiled batch 16", full),
      train("train vit-tiny fp32 recompute batch 16", full),
      train("train unet-small fp32 batch 4", full, {"unet-small", "--batch", "4"}),
      train("train unet-small bf16 batch 4", full),
      train("train unet-small fp32 compiled batch 4", full),
      train("train unet-small fp32 recompute batch 4", full),
      generation("generate gpt-mini kv-cache batch 1 tokens 64", full),
      generation("generate gpt-mini kv-cache batch 8 tokens 64", full),
      generation("generate gpt-mini no-cache batch 1 tokens 64", full),
      collective("allgather f32 4 KiB 2 ranks mpi", full, true),
      collective("allgather f32 16 MiB 2 ranks mpi", full, true),
      collective("reduce_scatter f32 4 KiB 2 ranks mpi", full, true),
      collective("reduce_scatter f32 16 MiB 2 ranks mpi", full, true),
  };
}

double number(const json::Value* v, const std::string& what) {
  DLF_CHECK(v != nullptr && v->kind == json::Value::Kind::number, "the line has no ", what);
  return std::stod(v->text);
}

std::string text(const json::Value* v) {
  return v != nullptr && v->kind == json::Value::Kind::string ? v->text : "";
}

std::vector<double> numbers(const json::Value* v, const std::string& what) {
  DLF_CHECK(v != nullptr && v->kind == json::Value::Kind::array, "the line has no ", what);
  std::vector<double> out;
  for (const json::Value& item : v->items) out.push_back(number(&item, what));
  return out;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n == 0 ? NAN : n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

std::string cache_entry(const std::string& cache, const std::string& key) {
  const size_t at = cache.find("\n" + key + ":");
  if (at == std::string::npos) return "";
  const size_t eq = cache.find('=', at), end = cache.find('\n', at + 1);
  return cache.substr(eq + 1, end - eq - 1);
}

// The peak a case's rate is a share of: the copy bandwidth for GB/s, else the matmul peak of
// the case's precision (a bf16 one for a case named so).
std::string peak_of(const std::string& case_name, const std::string& rate_unit) {
  if (rate_unit == "GB/s") return "bandwidth";
  return case_name.find(" bf16 ") != std::string::npos ? "matmul_bf16" : "matmul_f32";
}

std::string utc_now() {
  const std::time_t now = std::time(nullptr);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&now));
  return text;
}

std::string cmake_cache(const std::filesystem::path& build_dir) {
  std::ifstream in(build_dir / "CMakeCache.txt");
  DLF_CHECK(in.good(), "no CMake build in ", build_dir.string(), " (no CMakeCache.txt)");
  std::string text = "\n";  // so that every entry follows a newline
  text.append(std::istreambuf_iterator<char>(in), {});
  return text;
}

int reps_of(const SuiteCase& c, const RunOptions& options) {
  return options.reps > 0 ? options.reps : c.reps;
}

// `argv` run under the lock; its stderr without the trailing newlines.
detail::ProcessResult run_locked(const std::vector<std::string>& argv,
                                 const std::map<std::string, std::string>& env,
                                 const std::string& lock) {
  detail::ProcessResult r;
  {
    const detail::FileLock held(lock);
    r = detail::run_process(argv, env);
  }
  while (!r.err.empty() && r.err.back() == '\n') r.err.pop_back();
  return r;
}

}  // namespace

Tier parse_tier(const std::string& name) {
  if (name == "quick") return Tier::quick;
  if (name == "full") return Tier::full;
  throw Error("no benchmark tier '" + name + "' (quick or full)");
}

const char* tier_name(Tier tier) { return tier == Tier::quick ? "quick" : "full"; }

const std::vector<SuiteCase>& suite_cases() {
  static const std::vector<SuiteCase> cases = all_cases();
  return cases;
}

std::vector<SuiteCase> cases_of(Tier tier, const std::vector<std::string>& only) {
  std::vector<SuiteCase> out;
  bool named = only.empty();
  for (const SuiteCase& c : suite_cases()) {
    if (only.empty() && c.tier == Tier::full && tier == Tier::quick) continue;
    bool wanted = only.empty() || c.peak;
    for (const std::string& prefix : only) {
      if (c.name.rfind(prefix, 0) == 0) wanted = true, named = named || !c.peak;
    }
    if (wanted) out.push_back(c);
  }
  DLF_CHECK(named, "no case of the ", tier_name(tier), " tier starts with the names given (",
            only.front(), "...); dlf bench run --list shows them");
  return out;
}

CaseResults parse_case_line(const SuiteCase& c, const std::string& out) {
  const json::Value line = json::parse(out.substr(0, out.find('\n')));
  CaseResults r;
  Result& t = r.time;
  t.bench = text(line.find("bench"));
  t.case_name = c.name;
  t.impl = text(line.find("impl"));
  t.threads = c.threads;
  t.headline = number(line.find("value"), "value");
  t.headline_unit = text(line.find("unit"));
  t.repetitions = numbers(line.find("reps_ms"), "reps_ms");
  t.value = median(t.repetitions);
  Result& cpu = r.cpu_time;
  cpu = t;
  cpu.metric = "cpu_time";
  cpu.repetitions = numbers(line.find("reps_cpu_ms"), "reps_cpu_ms");
  cpu.value = median(cpu.repetitions);
  if (t.headline_unit == "GFLOP/s" || t.headline_unit == "GB/s") {
    r.rate = t.headline, r.rate_unit = t.headline_unit;
  } else if (line.find("gflops") != nullptr) {
    r.rate = number(line.find("gflops"), "gflops"), r.rate_unit = "GFLOP/s";
  }
  return r;
}

std::string cannot_run(const std::filesystem::path& build_dir, const SuiteCase& c,
                       const RunOptions& options) {
  const std::filesystem::path program = build_dir / "bench" / c.program;
  if (!std::filesystem::exists(program))
    return "no " + program.string() + " (a build before it, or its target not built)";
  if (c.mpi_ranks > 0 &&
      detail::run_process({"sh", "-c", "command -v \"$0\"", options.mpirun}).exit_code != 0)
    return "skipped: no " + options.mpirun + " on this host (OpenMPI's openmpi-bin) to start " +
           std::to_string(c.mpi_ranks) + " ranks";
  return "";
}

CaseResults run_case(const std::filesystem::path& build_dir, const SuiteCase& c,
                     const RunOptions& options) {
  const std::string why_not = cannot_run(build_dir, c, options);
  DLF_CHECK(why_not.empty(), "case '", c.name, "': ", why_not);
  std::vector<std::string> argv;
  if (c.mpi_ranks > 0)
    argv = {options.mpirun, "-np", std::to_string(c.mpi_ranks), "--allow-run-as-root",
            "--oversubscribe"};
  for (const std::string& arg : {(build_dir / "bench" / c.program).string(), std::string("--case"),
                                 c.name, std::string("--threads"), std::to_string(c.threads),
                                 std::string("--reps"), std::to_string(reps_of(c, options))})
    argv.push_back(arg);
  const detail::ProcessResult r = run_locked(argv, options.env, options.lock);
  DLF_CHECK(r.exit_code == 0, "case '", c.name, "' failed (exit ", r.exit_code, "): ", r.err);
  return parse_case_line(c, r.out);
}

double run_peer(const SuiteCase& c, const RunOptions& options) {
  const std::filesystem::path script = options.peer_dir / "run.sh";
  DLF_CHECK(std::filesystem::exists(script), "no peer at ", script.string());
  std::vector<std::string> argv = {script.string()};
  argv.insert(argv.end(), c.peer.begin(), c.peer.end());
  for (const std::string& arg : {std::string("--steps"), std::to_string(reps_of(c, options)),
                                 std::string("--warmup"), std::string("2"), std::string("--json")})
    argv.push_back(arg);
  std::map<std::string, std::string> env = options.env;
  env["PEER_THREADS"] = std::to_string(c.threads);
  const detail::ProcessResult r = run_locked(argv, env, options.lock);
  DLF_CHECK(r.exit_code == 0, "the peer failed (exit ", r.exit_code,
            "): ", r.err.substr(r.err.rfind('\n') + 1));  // the last line: above it, its build
  const size_t at = r.out.find("{\"bench\"");
  DLF_CHECK(at != std::string::npos, "the peer printed no line: ", r.out);
  return number(json::parse(r.out.substr(at, r.out.find('\n', at) - at)).find("median_ms"),
                "median_ms");
}

std::filesystem::path source_of_build(const std::filesystem::path& build_dir) {
  return cache_entry(cmake_cache(build_dir), "CMAKE_HOME_DIRECTORY");
}

RunInfo describe_build(const std::filesystem::path& build_dir) {
  const std::string cache = cmake_cache(build_dir);
  const std::string source = cache_entry(cache, "CMAKE_HOME_DIRECTORY");
  RunInfo info;
  const std::string log = detail::run_or_throw(
      "reading the build's commit", {"git", "-C", source, "log", "-1", "--format=%H%n%cI%n%s"});
  std::istringstream lines(log);
  std::getline(lines, info.commit);
  std::getline(lines, info.commit_date);
  std::getline(lines, info.subject);
  info.commit_depth = std::stoll(detail::run_or_throw(
      "counting the build's commits", {"git", "-C", source, "rev-list", "--count", "HEAD"}));
  const std::string changes = detail::run_or_throw(
      "reading the build's changes",
      {"git", "-C", source, "status", "--porcelain", "--untracked-files=no", "--", ".",
       ":(exclude)bench"});  // the harness of a revision build is today's (build_revision)
  if (!changes.empty()) info.subject = "(with uncommitted changes) " + info.subject;
  const std::string compiler = cache_entry(cache, "CMAKE_CXX_COMPILER");
  std::string version =
      compiler.empty() ? "" : detail::run_process({compiler, "-dumpfullversion"}).out;
  while (!version.empty() && version.back() == '\n') version.pop_back();
  info.build_flags = compiler + " " + version + " " + cache_entry(cache, "CMAKE_BUILD_TYPE") + " " +
                     cache_entry(cache, "CMAKE_CXX_FLAGS") +
                     " DLF_NATIVE=" + cache_entry(cache, "DLF_NATIVE");
  return info;
}

std::filesystem::path own_build_dir() {
  return std::filesystem::read_symlink("/proc/self/exe").parent_path().parent_path();
}

SuiteRun run_suite(History& history, RunInfo info, const std::filesystem::path& build_dir,
                   const std::vector<SuiteCase>& cases, const RunOptions& options,
                   const std::function<void(const Result&)>& progress) {
  DLF_CHECK(std::filesystem::exists(build_dir / "bench" / "suite_bench"), "no ",
            (build_dir / "bench" / "suite_bench").string(),
            " (a build with the benchmarks: DLF_BUILD_BENCH=ON, target suite_bench)");
  info.started = utc_now();
  info.host = this_host();
  info.load_1m = info.load_5m = info.load_15m = NAN;
  RunWriter writer = history.begin_run(info);
  SuiteRun run;
  run.run_id = writer.run_id();
  std::map<std::string, double> peaks;  // by the unit they normalise
  for (const SuiteCase& c : cases) {
    CaseResults r;
    std::string why_not = cannot_run(build_dir, c, options);
    if (why_not.empty()) {
      try {
        r = run_case(build_dir, c, options);
      } catch (const Error& e) {
        why_not = e.what();
      }
    }
    if (!why_not.empty()) {
      run.left_out.push_back({c.name, why_not});
      writer.add_left_out(run.left_out.back());
      continue;
    }
    if (!c.peer.empty() && !options.peer_dir.empty()) {
      try {
        const double ratio = run_peer(c, options) / r.time.value;
        r.time.peer_ratio = r.cpu_time.peer_ratio = ratio;
      } catch (const Error& e) {
        run.left_out.push_back({c.name + ": the peer", e.what()});
        writer.add_left_out(run.left_out.back());
      }
    }
    const std::string peak_name = peak_of(c.name, r.rate_unit);
    if (c.peak) {
      peaks[peak_name] = r.rate;
      writer.add_peak({peak_name, r.rate, r.rate_unit});
    } else if (peaks.count(peak_name)) {
      const double share = r.rate / peaks[peak_name];
      for (Result* x : {&r.time, &r.cpu_time}) x->normalised = share, x->normalised_to = peak_name;
    }
    for (const Result& x : {r.time, r.cpu_time}) {
      writer.add(x);
      run.results.push_back(x);
    }
    if (progress) progress(r.time);
  }
  DLF_CHECK(!run.results.empty(), "every case was left out, the run is not kept; the first: ",
            run.left_out.empty() ? "no case" : run.left_out.front().reason);
  double load[3] = {NAN, NAN, NAN};
  std::ifstream("/proc/loadavg") >> load[0] >> load[1] >> load[2];
  writer.set_load(load[0], load[1], load[2]);
  writer.commit();
  return run;
}

}  // namespace dlf::perf
