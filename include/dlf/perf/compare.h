// A/B on one host: two builds' runs of the same cases interleaved (A B, B A, ...), each case's
// ratio with a bootstrap interval, as asv continuous compares two revisions.
#pragma once
#include <filesystem>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include <dlf/perf/bootstrap.h>
#include <dlf/perf/suite.h>

namespace dlf::perf {

/// How two builds are compared.
struct CompareOptions {
  int rounds = 10;      ///< process runs of each case for each side, interleaved
  RunOptions run = {};  ///< the lock, repetitions, and the environment of both sides
  /// Added to B's environment only: DLF_BENCH_SLOWDOWN to calibrate the comparison
  std::map<std::string, std::string> env_b = {};
  std::string metric = "cpu_time";  ///< what decides: cpu_time or time
  double confidence = 0.99;         ///< of the intervals
  /// A verdict needs the interval off 1 and the ratio at least this far from it
  double min_change = 0.02;
};

/// One case compared.
struct CaseComparison {
  std::string case_name;  ///< the case
  /// Each round's median ms a call of A and of B, wall clock
  ///@{
  std::vector<double> a_time, b_time;
  ///@}
  /// Each round's median CPU ms a call of A and of B
  ///@{
  std::vector<double> a_cpu, b_cpu;
  ///@}
  RatioEstimate time;      ///< B / A of the wall-clock times
  RatioEstimate cpu_time;  ///< B / A of the CPU times
  /// "slower", "faster" or "same", from the options' metric
  std::string verdict;
};

/// Runs `cases` (their peaks left out, and those either build cannot run: cannot_run) against
/// builds A and B in `options.rounds` rounds, A first in even rounds and B first in odd ones,
/// and compares each case. `progress` sees one line per round and per case left out.
std::vector<CaseComparison> compare_builds(
    const std::filesystem::path& build_a, const std::filesystem::path& build_b,
    const std::vector<SuiteCase>& cases, const CompareOptions& options,
    const std::function<void(const std::string&)>& progress = {});

/// The verdict of a ratio's estimate: "slower" when its interval lies above 1 and the ratio is
/// at least 1 + min_change, "faster" in the mirror case, else "same".
std::string verdict_of(const RatioEstimate& ratio, double min_change);

}  // namespace dlf::perf
