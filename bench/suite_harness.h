// The harness of `dlf bench run`'s programs (suite_bench, suite_train_bench, suite_comm_bench):
// their command line, the timed repetitions and the one JSON line a case prints (shared/BENCH.md)
// with every repetition's wall-clock and CPU time besides the median, and the FLOPs and bytes of
// one call so the suite can put it against the host's peaks of the same run.
//
//   PROGRAM --list
//   PROGRAM --case NAME [--threads N] [--reps N] [--warmup N] [--rep-ms MS]
//
// Each repetition is timed twice: wall clock, and the process's CPU time (the suite's cases run on
// one thread, where CPU time leaves out the time spent waiting for a core on a loaded machine).
//
// DLF_BENCH_SLOWDOWN=PREFIX=FACTOR[,...] makes every case whose name starts with PREFIX that
// many times slower: after each repetition's calls the harness busy-waits (factor - 1) times
// the CPU time they took, inside the timed region. It is the regression `dlf bench compare` is
// calibrated on (docs/performance_tracking.md); no kernel carries test code for it.
//
// suite_bench uses it at past revisions too (perf/revisions.cpp lays it over them), so it uses
// only the public API that dlf has kept since 2026-11-25.
#pragma once
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

#include <time.h>

#include <dlf/dlf.h>

#include "bench/bench_cli.h"
#include "bench/bench_json.h"

namespace dlf::bench::suite {

struct Options {
  std::string name;
  bool list = false;
  int threads = 1, reps = 10, warmup = 2;
  double rep_ms = 20;  // calls are batched so that one repetition takes at least this long
};

// What one case measures: `call` is one call of the thing timed; flops and bytes are one call's
// (0 where they do not apply); the headline is GFLOP/s, GB/s or items/s from the median.
struct Case {
  std::string bench = {};
  std::function<void()> call = {};
  double flops = 0, bytes = 0;
  double items = 0;                     // items (images, tokens) per call, for a throughput
  std::string item_unit = {};           // headline: img/s, tok/s
  std::function<void()> baseline = {};  // a bare oneDNN call of the same work, or empty
};

// The timed repetitions of a case: one call's wall-clock and CPU time in each.
struct Measured {
  std::vector<double> wall_ms, cpu_ms;
  int calls = 0;  // calls a repetition
};

inline Options parse(int argc, char** argv, const std::string& what) {
  Options o;
  CLI::App app{what + ": one JSON line"};
  app.add_flag("--list", o.list, "print the cases' names, one a line");
  app.add_option("--case", o.name, "the case to run");
  app.add_option("--threads", o.threads, "CPU threads")->capture_default_str();
  app.add_option("--reps", o.reps, "timed repetitions")->capture_default_str();
  app.add_option("--warmup", o.warmup, "untimed calls first")->capture_default_str();
  app.add_option("--rep-ms", o.rep_ms, "calls a repetition: enough to take this long")
      ->capture_default_str();
  parse_or_exit(app, argc, argv);
  return o;
}

// The slowdown DLF_BENCH_SLOWDOWN asks of `name`: 1 unless a prefix matches.
inline double slowdown_of(const std::string& name) {
  const char* knob = std::getenv("DLF_BENCH_SLOWDOWN");
  if (knob == nullptr) return 1;
  std::string spec = knob;
  for (size_t start = 0; start <= spec.size();) {
    const size_t end = std::min(spec.find(',', start), spec.size());
    const std::string item = spec.substr(start, end - start);
    const size_t eq = item.rfind('=');
    DLF_CHECK(eq != std::string::npos, "DLF_BENCH_SLOWDOWN: '", item,
              "' is not PREFIX=FACTOR (e.g. group_norm=1.10)");
    const double factor = std::strtod(item.c_str() + eq + 1, nullptr);
    DLF_CHECK(factor >= 1 && factor < 100, "DLF_BENCH_SLOWDOWN: the factor of '", item,
              "' must be from 1 to 100");
    if (name.rfind(item.substr(0, eq), 0) == 0) return factor;
    start = end + 1;
  }
  return 1;
}

// The CPU time this process has used, in ms: with one thread, what a call costs whatever else
// the machine runs (time waiting for a core is not in it).
inline double cpu_ms_now() {
  timespec t{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return double(t.tv_sec) * 1e3 + double(t.tv_nsec) / 1e6;
}

// The FLOPs a training step's forward and backward dispatch (an untimed step of `loss`), which
// the suite puts against the run's matmul peak.
inline double step_flops(const std::function<Tensor()>& loss) {
  OpProfile profile;
  loss().backward();
  return profile.outermost().flops;
}

// The timed repetitions, never inlined (a profiler can single them out): `calls` calls of `fn` a
// repetition, each repetition stretched by `slowdown`; the wall-clock and the process's CPU time
// of one call in each. The stretch is a busy-wait until the repetition has used `slowdown` times
// the CPU time its calls did, so it costs what a slower kernel would, on a loaded machine too.
[[gnu::noinline]] inline void timed_reps(const std::function<void()>& fn, int reps, int calls,
                                         double slowdown, Measured& m) {
  for (int r = 0; r < reps; ++r) {
    const double cpu_start = cpu_ms_now();
    const auto start = std::chrono::steady_clock::now();
    for (int c = 0; c < calls; ++c) fn();
    if (slowdown > 1) {
      const double until = cpu_start + (cpu_ms_now() - cpu_start) * slowdown;
      while (cpu_ms_now() < until) {
      }
    }
    const auto wall = std::chrono::steady_clock::now() - start;
    m.wall_ms.push_back(std::chrono::duration<double, std::milli>(wall).count() / calls);
    m.cpu_ms.push_back((cpu_ms_now() - cpu_start) / calls);
  }
}

// Warm-up, then the timed repetitions of `c`, with enough calls a repetition for rep_ms (from one
// more call's time). `agree`, when given, makes every rank of a collective case use the same
// number of calls (the largest any rank asks for).
inline Measured measure(const Case& c, const Options& o,
                        const std::function<int(int)>& agree = {}) {
  for (int i = 0; i < o.warmup; ++i) c.call();
  const double one_ms = time_once_ms(c.call);
  Measured m;
  m.calls = int(std::clamp(std::ceil(o.rep_ms / std::max(one_ms, 1e-6)), 1.0, 1e6));
  if (agree) m.calls = agree(m.calls);
  timed_reps(c.call, o.reps, m.calls, slowdown_of(o.name), m);
  return m;
}

// The case's line on stdout. The headline comes from the CPU time on one thread (a loaded
// machine's waits left out), else from the wall clock.
inline void print_line(const Case& c, const Options& o, const Measured& m) {
  const Timing t = summarize(m.wall_ms);
  const double cpu_median_ms = summarize(m.cpu_ms).median_ms;
  const double seconds = (o.threads == 1 ? cpu_median_ms : t.median_ms) / 1e3;
  JsonLine line;
  line.add("bench", c.bench).add("case", o.name).add("impl", "dlf").add("threads", o.threads);
  if (c.items > 0) {
    line.add("metric", "throughput").add("value", c.items / seconds).add("unit", c.item_unit);
  } else if (c.flops > 0) {
    line.add("metric", "gflops").add("value", c.flops / seconds / 1e9).add("unit", "GFLOP/s");
  } else if (c.bytes > 0) {
    line.add("metric", "bandwidth").add("value", c.bytes / seconds / 1e9).add("unit", "GB/s");
  } else {
    line.add("metric", "time").add("value", seconds * 1e6).add("unit", "us");
  }
  add_timing(line, t);
  line.add("cpu_median_ms", cpu_median_ms);
  line.add("flops", c.flops).add("bytes", c.bytes).add("calls_per_rep", m.calls);
  if (c.items > 0 && c.flops > 0) line.add("gflops", c.flops / seconds / 1e9);
  if (c.baseline) {
    const Timing base = time_ms(c.baseline, o.warmup, o.reps);
    line.add("baseline_impl", "onednn").add("baseline", c.flops / base.median_ms / 1e6);
    line.add("ratio", base.median_ms / t.median_ms);
  }
  const std::string text = with_array(line.str(), "reps_ms", m.wall_ms);
  std::printf("%s\n", with_array(text, "reps_cpu_ms", m.cpu_ms).c_str());
  std::fflush(stdout);
}

// A program's main: --list prints `names`, --case runs the case `run` is given (one line); an
// error is one line on stderr and exit 1.
inline int main_of(int argc, char** argv, const std::string& program, const std::string& what,
                   const std::function<std::vector<std::string>()>& names,
                   const std::function<void(const Options&)>& run) {
  try {
    const Options o = parse(argc, argv, what);
    if (o.list) {
      for (const std::string& name : names()) std::printf("%s\n", name.c_str());
      return 0;
    }
    DLF_CHECK(!o.name.empty(), "--case NAME or --list");
    set_num_threads(o.threads);
    manual_seed(1234);
    run(o);
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: %s\n", program.c_str(), e.what());
    return 1;
  }
}

}  // namespace dlf::bench::suite
