// What `dlf bench` prints of a suite's results, its change points and an A/B comparison.
#pragma once
#include <string>

#include <dlf/perf/compare.h>
#include <dlf/perf/findings.h>
#include <dlf/perf/history.h>

namespace dlf::perf {

/// One line of a run's result: the case, its time a call, its headline figure, and its ratio to
/// the peak and to the peer where it has them.
std::string describe(const Result& result);

/// One line of a change point: regression or improvement, the case and metric, the commits
/// around it, the means before and after, its p-value, confidence and the machine's load;
/// `at_newest` marks one at the newest commit.
std::string describe(const Finding& finding, bool at_newest);

/// What `dlf bench check` says of a history: a line a change point of `metric` and a summary.
struct HistoryCheck {
  std::string text;               ///< the lines
  int regressions_at_newest = 0;  ///< change points that slowed the newest commit
};
/// The change points of `history`'s series of `metric` (find_changes), described.
HistoryCheck check_history(const History& history, const std::string& metric,
                           const ChangePointOptions& options);

/// One line of a comparison of builds A and B: the case, the verdict and B/A's ratios of CPU and
/// wall time with their intervals.
std::string describe(const CaseComparison& comparison);
/// The same as one JSON line ("bench": "compare"), naming the commits, the rounds and the metric
/// that decided.
std::string to_json_line(const CaseComparison& comparison, const std::string& a,
                         const std::string& b, int rounds, const std::string& metric);

}  // namespace dlf::perf
