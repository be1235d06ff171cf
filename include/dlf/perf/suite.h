// The benchmark suite behind `dlf bench run`: its cases in two tiers, each run as a process of
// one of a build's bench/ programs (suite_bench, suite_train_bench, suite_comm_bench; under
// mpirun for the MPI cases), and a whole tier written to the history as one run.
#pragma once
#include <filesystem>
#include <functional>
#include <limits>
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
  std::string name;         ///< the program's case name
  Tier tier = Tier::quick;  ///< the smallest tier it is in (quick cases are in full too)
  int threads = 1;          ///< CPU threads it runs on (per process)
  int reps = 10;            ///< timed repetitions
  bool peak = false;        ///< a host peak: run first; the others are normalised by it
  std::string program = "suite_bench";  ///< the bench/ program that runs it
  int mpi_ranks = 0;  ///< run as this many processes under mpirun (0: one process, no MPI)
  /// The peer's arguments for the same work (shared/peer/run.sh MODEL --batch B ...): the peer
  /// runs after the case, and its median over dlf's is the result's peer_ratio; empty: none
  std::vector<std::string> peer = {};
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
  int reps = 0;                   ///< repetitions of each case (0: the case's own)
  std::string mpirun = "mpirun";  ///< the MPI cases' launcher (searched in PATH)
  /// The peer's folder (its run.sh builds and runs it); "": no ratio to the peer
  std::filesystem::path peer_dir = {};
};

/// One case run once: its wall-clock result and its CPU-time result.
struct CaseResults {
  Result time;      ///< metric "time"
  Result cpu_time;  ///< metric "cpu_time"
  /// What the run's matching peak normalises: the headline when it is GFLOP/s or GB/s,
  /// a training step's GFLOP/s (the line's "gflops") beside its tok/s; NaN: nothing
  double rate = std::numeric_limits<double>::quiet_NaN();
  std::string rate_unit;  ///< GFLOP/s or GB/s
};

/// The results in the first line a case's program printed (shared/BENCH.md, with "reps_ms" and
/// "reps_cpu_ms"); a dlf::Error naming what the line lacks.
CaseResults parse_case_line(const SuiteCase& c, const std::string& out);

/// Why `c` cannot run against `build_dir` here ("" when it can): its program is not in that
/// build (a revision before it), or it is an MPI case and options.mpirun is not installed.
std::string cannot_run(const std::filesystem::path& build_dir, const SuiteCase& c,
                       const RunOptions& options);

/// Runs `c` as one process of its program in `build_dir`/bench (under mpirun for an MPI case)
/// under the lock; a dlf::Error with its stderr when it fails.
CaseResults run_case(const std::filesystem::path& build_dir, const SuiteCase& c,
                     const RunOptions& options);

/// The peer's median wall-clock ms a call on `c`'s work: `options.peer_dir`/run.sh with c.peer,
/// as many steps as c's repetitions and c's threads, under the lock; a dlf::Error with its
/// stderr's last line when it cannot run or its line has no median_ms.
double run_peer(const SuiteCase& c, const RunOptions& options);

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
  int64_t run_id = 0;             ///< the run's row
  std::vector<Result> results;    ///< what was written
  std::vector<LeftOut> left_out;  ///< cases that failed or could not run here, and why
};

/// Runs `cases` (peaks first) against `build_dir` and writes them to `history` as one run of
/// `info`, in one transaction: a killed run leaves nothing. Each result of a case with a
/// GFLOP/s or GB/s rate is normalised by the run's matching peak (the copy bandwidth, or the
/// matmul peak of the case's precision: bf16 for a case whose name says bf16). A case that fails
/// (it may not exist at an old revision) or cannot run here (cannot_run) is left out, with its
/// reason, in left_out and in the history; when every case is left out, or the build has no
/// suite_bench, a dlf::Error and nothing written. `progress` sees each result
/// as it comes.
SuiteRun run_suite(History& history, RunInfo info, const std::filesystem::path& build_dir,
                   const std::vector<SuiteCase>& cases, const RunOptions& options,
                   const std::function<void(const Result&)>& progress = {});

}  // namespace dlf::perf
