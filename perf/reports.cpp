#include <dlf/perf/reports.h>

#include <cmath>

#include <dlf/device/formatted.h>
#include <dlf/json_line.h>

namespace dlf::perf {

std::string describe(const Result& x) {
  std::string s = formatted("%-44s %10.4f ms  %10.4g %s", x.case_name.c_str(), x.value, x.headline,
                            x.headline_unit.c_str());
  if (std::isfinite(x.normalised))
    s += formatted("  %.3f of %s", x.normalised, x.normalised_to.c_str());
  if (std::isfinite(x.peer_ratio)) s += formatted("  %.2fx the peer", x.peer_ratio);
  return s + "\n";
}

std::string describe(const Finding& f, bool at_newest) {
  return formatted(
      "%s %s [%s] %s..%s %+.1f %%: %.4g -> %.4g %s a call (p %.2g, confidence %.4f %%, "
      "load %.1f -> %.1f)%s\n",
      f.regression() ? "regression " : "improvement", f.case_name.c_str(), f.metric.c_str(),
      f.last_before.substr(0, 12).c_str(), f.first_after.substr(0, 12).c_str(),
      100 * f.change.change(), f.change.mean_before, f.change.mean_after, f.unit.c_str(),
      f.change.p_value, 100 * f.confidence(), f.load_before, f.load_after,
      at_newest ? "  <- the newest commit" : "");
}

std::string describe(const CaseComparison& c) {
  return formatted("%-44s %-6s B/A cpu %.3f [%.3f, %.3f]  wall %.3f [%.3f, %.3f]",
                   c.case_name.c_str(), c.verdict.c_str(), c.cpu_time.ratio, c.cpu_time.low,
                   c.cpu_time.high, c.time.ratio, c.time.low, c.time.high);
}

std::string to_json_line(const CaseComparison& c, const std::string& a, const std::string& b,
                         int rounds, const std::string& metric) {
  JsonLine line;
  line.add("bench", "compare").add("case", c.case_name).add("a", a).add("b", b);
  line.add("rounds", rounds).add("metric", metric).add("verdict", c.verdict);
  for (const auto& [name, r] : {std::pair{"time", c.time}, std::pair{"cpu_time", c.cpu_time}})
    line.add(std::string(name) + "_ratio", r.ratio)
        .add(std::string(name) + "_low", r.low)
        .add(std::string(name) + "_high", r.high);
  return line.str();
}

HistoryCheck check_history(const History& history, const std::string& metric,
                           const ChangePointOptions& options) {
  const std::vector<Series> series = history.series();
  const std::vector<Finding> findings = find_changes(series, metric, options);
  const std::string newest = newest_commit(series);
  HistoryCheck check;
  for (const Finding& f : findings) {
    const bool at_newest = f.first_after == newest;
    if (at_newest && f.regression()) ++check.regressions_at_newest;
    check.text += describe(f, at_newest);
  }
  check.text += std::to_string(findings.size()) + " change points in " +
                std::to_string(series.size()) + " series over " + std::to_string(history.runs()) +
                " runs; " + std::to_string(check.regressions_at_newest) +
                " regressions at the newest commit " + newest.substr(0, 12) + "\n";
  return check;
}

}  // namespace dlf::perf
