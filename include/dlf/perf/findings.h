// What the history says changed: the change points of every series, as commit ranges with
// their size and confidence (`dlf bench check`, the dashboard's summary).
#pragma once
#include <string>
#include <vector>

#include <dlf/perf/change_points.h>
#include <dlf/perf/history.h>

namespace dlf::perf {

/// A change point of one series, in commits.
struct Finding {
  std::string host_class;     ///< the series' host class
  std::string case_name;      ///< its case
  std::string metric;         ///< time or cpu_time
  std::string unit;           ///< of the means
  ChangePoint change;         ///< where and how much (points index the series' points)
  std::string last_before;    ///< the last commit measured before the change
  std::string first_after;    ///< the first commit measured after it: the range's end
  std::string after_subject;  ///< that commit's subject
  double load_before = 0;     ///< the mean 1-minute load of the runs before (NaN when unknown)
  double load_after = 0;      ///< ... and of the runs after
  /// Slower (the metrics are times: higher is worse)
  bool regression() const { return change.change() > 0; }
  /// 1 - p: how sure the t-test is that the change is real
  double confidence() const { return 1 - change.p_value; }
};

/// The change points of every series of `metric` ("" or "all": every metric), each series'
/// points its runs' medians, in commit order. The host peaks' series are left out: they tell
/// how the machine was, not what the code did.
std::vector<Finding> find_changes(const std::vector<Series>& series, const std::string& metric,
                                  const ChangePointOptions& options = {});

/// The newest commit in `series` (by commit date, then run start), or "".
std::string newest_commit(const std::vector<Series>& series);

}  // namespace dlf::perf
