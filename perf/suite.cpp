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

const SuiteCase kCases[] = {
    {.name = "peak matmul f32 M1024 K1024 N1024", .reps = 5, .peak = true},
    {.name = "peak bandwidth copy 64 MiB", .reps = 5, .peak = true},
    {.name = "dispatch add f32 [16]"},
    {.name = "matmul f32 M512 K512 N512"},
    {.name = "add f32 [8,64,32,32]"},
    {.name = "group_norm forward f32 [8,64,32,32] g32"},
    {.name = "silu forward+backward f32 [8,64,32,32]"},
    {.name = "conv2d forward f32 [8,64,32,32] 64->64 3x3"},
    {.name = "train unet-tiny fp32 batch 8", .reps = 6},
    {.name = "train gpt-nano fp32 batch 8x64", .reps = 6},
    {.name = "matmul bf16 M512 K512 N512", .tier = Tier::full},
    {.name = "layer_norm forward f32 [2048,768]", .tier = Tier::full},
    {.name = "softmax f32 [512,1024]", .tier = Tier::full},
    {.name = "train gpt-mini fp32 batch 4x128", .tier = Tier::full, .reps = 5},
    {.name = "train gpt-mini fp32 recompute batch 4x128", .tier = Tier::full, .reps = 5},
};

double number(const json::Value* v, const std::string& what) {
  DLF_CHECK(v != nullptr && v->kind == json::Value::Kind::number, "suite_bench's line has no ",
            what);
  return std::stod(v->text);
}

std::string text(const json::Value* v) {
  return v != nullptr && v->kind == json::Value::Kind::string ? v->text : "";
}

std::vector<double> numbers(const json::Value* v, const std::string& what) {
  DLF_CHECK(v != nullptr && v->kind == json::Value::Kind::array, "suite_bench's line has no ",
            what);
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

}  // namespace

Tier parse_tier(const std::string& name) {
  if (name == "quick") return Tier::quick;
  if (name == "full") return Tier::full;
  throw Error("no benchmark tier '" + name + "' (quick or full)");
}

const char* tier_name(Tier tier) { return tier == Tier::quick ? "quick" : "full"; }

const std::vector<SuiteCase>& suite_cases() {
  static const std::vector<SuiteCase> cases(std::begin(kCases), std::end(kCases));
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

CaseResults run_case(const std::filesystem::path& build_dir, const SuiteCase& c,
                     const RunOptions& options) {
  const std::filesystem::path program = build_dir / "bench" / "suite_bench";
  DLF_CHECK(std::filesystem::exists(program), "no ", program.string(),
            " (build the suite_bench target of that build first)");
  const int reps = options.reps > 0 ? options.reps : c.reps;
  detail::ProcessResult r;
  {
    const detail::FileLock lock(options.lock);
    r = detail::run_process({program.string(), "--case", c.name, "--threads",
                             std::to_string(c.threads), "--reps", std::to_string(reps)},
                            options.env);
  }
  std::string err = r.err;
  while (!err.empty() && err.back() == '\n') err.pop_back();
  DLF_CHECK(r.exit_code == 0, "case '", c.name, "' failed (exit ", r.exit_code, "): ", err);
  const json::Value line = json::parse(r.out.substr(0, r.out.find('\n')));
  CaseResults out;
  Result& t = out.time;
  t.bench = text(line.find("bench"));
  t.case_name = c.name;
  t.impl = text(line.find("impl"));
  t.threads = c.threads;
  t.headline = number(line.find("value"), "value");
  t.headline_unit = text(line.find("unit"));
  t.repetitions = numbers(line.find("reps_ms"), "reps_ms");
  t.value = median(t.repetitions);
  Result& cpu = out.cpu_time;
  cpu = t;
  cpu.metric = "cpu_time";
  cpu.repetitions = numbers(line.find("reps_cpu_ms"), "reps_cpu_ms");
  cpu.value = median(cpu.repetitions);
  return out;
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
    try {
      r = run_case(build_dir, c, options);
    } catch (const Error& e) {
      run.failures.push_back(e.what());
      continue;
    }
    if (c.peak) {
      const std::string name = r.time.headline_unit == "GB/s" ? "bandwidth" : "matmul_f32";
      peaks[r.time.headline_unit] = r.time.headline;
      writer.add_peak({name, r.time.headline, r.time.headline_unit});
    } else if (peaks.count(r.time.headline_unit)) {
      const double share = r.time.headline / peaks[r.time.headline_unit];
      const std::string to = r.time.headline_unit == "GB/s" ? "bandwidth" : "matmul_f32";
      for (Result* x : {&r.time, &r.cpu_time}) x->normalised = share, x->normalised_to = to;
    }
    for (const Result& x : {r.time, r.cpu_time}) {
      writer.add(x);
      run.results.push_back(x);
    }
    if (progress) progress(r.time);
  }
  DLF_CHECK(!run.results.empty(), "every case failed, the run is not kept; the first: ",
            run.failures.empty() ? "no case" : run.failures.front());
  double load[3] = {NAN, NAN, NAN};
  std::ifstream("/proc/loadavg") >> load[0] >> load[1] >> load[2];
  writer.set_load(load[0], load[1], load[2]);
  writer.commit();
  return run;
}

}  // namespace dlf::perf
