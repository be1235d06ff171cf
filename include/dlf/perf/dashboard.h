// The benchmark dashboard: one self-contained HTML page (inline SVG, no script or style from the
// network) with a chart per case and metric over the commits, and what changed since a commit.
#pragma once
#include <string>
#include <vector>

#include <dlf/perf/findings.h>
#include <dlf/perf/history.h>

namespace dlf::perf {

/// What the page shows.
struct DashboardOptions {
  std::string title = "dlf benchmarks";  ///< the page's heading
  /// The summary lists the changes after this commit (a hash or its prefix); "": every change
  std::string since = {};
};

/// The page: a summary table of `findings` (those after options.since), then one chart per case
/// and metric: each run's repetitions as points, a line through each commit's median run per
/// host class,
/// each change point marked between its two commits with its size. Charts are SVG elements of
/// class "chart"; a script marks the body with data-charts (how many) and data-drawn (how many
/// the browser laid out with their points), so a headless browser can tell they were drawn.
std::string render_dashboard(const std::vector<Series>& series,
                             const std::vector<Finding>& findings,
                             const DashboardOptions& options = {});

/// render_dashboard written to `path` whole (a temporary file renamed over it).
void write_dashboard(const std::string& path, const std::vector<Series>& series,
                     const std::vector<Finding>& findings, const DashboardOptions& options = {});

}  // namespace dlf::perf
