#include <dlf/perf/findings.h>

#include <cmath>

namespace dlf::perf {
namespace {

double mean_load(const std::vector<SeriesPoint>& points, size_t begin, size_t end) {
  double sum = 0;
  int n = 0;
  for (size_t i = begin; i < end; ++i) {
    if (std::isfinite(points[i].run.load_1m)) sum += points[i].run.load_1m, ++n;
  }
  return n ? sum / n : NAN;
}

}  // namespace

std::vector<Finding> find_changes(const std::vector<Series>& series, const std::string& metric,
                                  const ChangePointOptions& options) {
  std::vector<Finding> out;
  for (const Series& s : series) {
    if (!metric.empty() && metric != "all" && s.metric != metric) continue;
    if (s.points.front().result.bench == "peak") continue;  // the host's, not the code's
    std::vector<double> values;
    std::vector<size_t> commits;  // a change falls between commits, not between runs of one
    for (size_t i = 0; i < s.points.size(); ++i) {
      const bool next = i > 0 && s.points[i].run.commit != s.points[i - 1].run.commit;
      commits.push_back(i == 0 ? 0 : commits.back() + (next ? 1 : 0));
      values.push_back(s.points[i].result.value);
    }
    for (const ChangePoint& c : e_divisive(values, options, commits)) {
      const SeriesPoint& after = s.points[c.index];
      out.push_back({.host_class = s.host_class,
                     .case_name = s.case_name,
                     .metric = s.metric,
                     .unit = s.unit,
                     .change = c,
                     .last_before = s.points[c.index - 1].run.commit,
                     .first_after = after.run.commit,
                     .after_subject = after.run.subject,
                     .load_before = mean_load(s.points, c.index - c.points_before, c.index),
                     .load_after = mean_load(s.points, c.index, c.index + c.points_after)});
    }
  }
  return out;
}

std::string newest_commit(const std::vector<Series>& series) {
  std::pair<std::string, std::string> newest;  // (commit date, start), commit
  std::string commit;
  for (const Series& s : series) {
    for (const SeriesPoint& p : s.points) {
      const std::pair<std::string, std::string> at{p.run.commit_date, p.run.started};
      if (commit.empty() || at > newest) newest = at, commit = p.run.commit;
    }
  }
  return commit;
}

}  // namespace dlf::perf
