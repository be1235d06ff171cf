// The benchmark suite behind `dlf bench run`: its cases in two tiers, each run as a process of
// a build's bench/suite_bench, and a whole tier written to the history as one run.
#pragma once
#include <filesystem>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include <dlf/perf/history.h>

namespace dlf::perf {

/// quick: a couple of minutes, the cases a change most often moves; full: every case.
enum class Tier { quick, full };

/// "quick" or "full" as a Tier; a dlf::Error names the choices otherwise.
Tier parse_tier(const std::string& name);
/// The tier's name.
const char* tier_name(Tier tier);

/// One case of the suite.
struct SuiteCase {
  std::string name;         ///< suite_bench's case name
  Tier tier = Tier::quick;  ///< the smallest tier it is in (quick cases are in full too)
  int threads = 1;          ///< CPU threads it runs on
  int reps = 10;            ///< timed repetitions
  bool peak = false;        ///< a host peak: run first; the others are normalised by it
};

/// Every case, peaks first.
const std::vector<SuiteCase>& suite_cases();
/// The cases of `tier`, peaks included; with `only`, just the cases whose names start with one
/// of them, whatever their tier (and the peaks). A dlf::Error when `only` names nothing.
std::vector<SuiteCase> cases_of(Tier tier, const std::vector<std::string>& only = {});

/// How cases are run.
struct RunOptions {
  /// Added to the cases' environment (DLF_BENCH_SLOWDOWN, say)
  std::map<std::string, std::string> env = {};
  /// Held around each case's process, as every timed run on the machine does ("": none)
  std::string lock = "/tmp/bench.lock";
  int reps = 0;  ///< repetitions of each case (0: the case's own)
};

/// One case run once: its wall-clock result and its CPU-time result.
struct CaseResults {
  Result time;      ///< metric "time"
  Result cpu_time;  ///< metric "cpu_time"
};

/// Runs `c` as one process of `build_dir`/bench/suite_bench under the lock; a dlf::Error with
/// its stderr when it fails.
CaseResults run_case(const std::filesystem::path& build_dir, const SuiteCase& c,
                     const RunOptions& options);

/// What the build in `build_dir` is: its source tree's commit, date and subject (git), and the
/// compiler and flags of its CMake cache.
RunInfo describe_build(const std::filesystem::path& build_dir);

/// The source tree a CMake build folder was configured from (its cache's CMAKE_HOME_DIRECTORY).
std::filesystem::path source_of_build(const std::filesystem::path& build_dir);

/// The build the running program belongs to (the folder two up from /proc/self/exe, as
/// build/release/apps/dlf sits in build/release).
std::filesystem::path own_build_dir();

/// A tier run into the history.
struct SuiteRun {
  int64_t run_id = 0;                 ///< the run's row
  std::vector<Result> results;        ///< what was written
  std::vector<std::string> failures;  ///< cases that failed at this revision (one line each)
};

/// Runs `cases` (peaks first) against `build_dir` and writes them to `history` as one run of
/// `info`, in one transaction: a killed run leaves nothing. Each result of a case with a
/// GFLOP/s or GB/s figure is normalised by the run's matching peak. A case that fails (it may
/// not exist at an old revision) is left out and named in failures; when every case fails, or
/// the build has no suite_bench, a dlf::Error and nothing written. `progress` sees each result
/// as it comes.
SuiteRun run_suite(History& history, RunInfo info, const std::filesystem::path& build_dir,
                   const std::vector<SuiteCase>& cases, const RunOptions& options,
                   const std::function<void(const Result&)>& progress = {});

}  // namespace dlf::perf
