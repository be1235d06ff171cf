#include <dlf/device/atomic_file.h>
#include <dlf/error.h>
#include <dlf/perf/dashboard.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <set>
#include <tuple>

namespace dlf::perf {
namespace {

std::string html_text(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '&')
      out += "&amp;";
    else if (c == '<')
      out += "&lt;";
    else if (c == '>')
      out += "&gt;";
    else if (c == '"')
      out += "&quot;";
    else
      out += c;
  }
  return out;
}

std::string fmt(double v, const char* format = "%.4g") {
  if (!std::isfinite(v)) return "–";
  char text[48];
  std::snprintf(text, sizeof text, format, v);
  return text;
}

const char* const kHostColours[] = {"#1f77b4", "#ff7f0e", "#2ca02c", "#9467bd", "#8c564b"};

// The commits of the history in order, each with its position on every chart's x axis.
struct CommitAxis {
  std::vector<std::string> commits;  // in order
  std::map<std::string, size_t> position;
  std::map<std::string, std::string> subject;

  explicit CommitAxis(const std::vector<Series>& series) {
    std::set<std::tuple<std::string, int64_t, std::string>> ordered;  // (date, depth, commit)
    for (const Series& s : series)
      for (const SeriesPoint& p : s.points) {
        ordered.insert({p.run.commit_date, p.run.commit_depth, p.run.commit});
        subject[p.run.commit] = p.run.subject;
      }
    for (const auto& [date, depth, commit] : ordered) {
      if (position.emplace(commit, commits.size()).second) commits.push_back(commit);
    }
  }
};

// One chart's plotting area: commits across, the metric up.
struct Plot {
  static constexpr double kWidth = 860, kHeight = 310, kLeft = 70, kRight = 20, kTop = 40,
                          kBottom = 80;
  size_t commits;
  double low, high;
  double x(double position) const {
    const double span = commits > 1 ? double(commits - 1) : 1;
    return kLeft + position / span * (kWidth - kLeft - kRight);
  }
  double y(double v) const {
    return kHeight - kBottom - (v - low) / (high - low) * (kHeight - kTop - kBottom);
  }
};

std::string chart(const std::string& case_name, const std::string& metric,
                  const std::vector<const Series*>& hosts, const std::vector<Finding>& findings,
                  const CommitAxis& axis) {
  double low = INFINITY, high = -INFINITY;
  for (const Series* s : hosts)
    for (const SeriesPoint& p : s->points)
      for (double v : p.result.repetitions) low = std::min(low, v), high = std::max(high, v);
  if (!std::isfinite(low)) return "";
  const double pad = high > low ? 0.08 * (high - low) : std::max(1e-9, 0.05 * std::abs(low));
  const Plot plot{axis.commits.size(), std::max(0.0, low - pad), high + pad};
  const std::string unit = hosts.front()->unit;
  std::string svg = "<svg class=\"chart\" xmlns=\"http://www.w3.org/2000/svg\" width=\"" +
                    fmt(Plot::kWidth) + "\" height=\"" + fmt(Plot::kHeight) +
                    "\" font-family=\"sans-serif\" font-size=\"11\">";
  svg += "<text x=\"" + fmt(Plot::kLeft) + "\" y=\"16\" font-weight=\"bold\" font-size=\"13\">" +
         html_text(case_name) + " — " + html_text(metric) + " (" + html_text(unit) +
         " a call)</text>";
  for (int i = 0; i <= 4; ++i) {  // horizontal grid with values
    const double v = plot.low + (plot.high - plot.low) * i / 4;
    svg += "<line x1=\"" + fmt(Plot::kLeft) + "\" x2=\"" + fmt(Plot::kWidth - Plot::kRight) +
           "\" y1=\"" + fmt(plot.y(v)) + "\" y2=\"" + fmt(plot.y(v)) + "\" stroke=\"#e4e4e4\"/>";
    svg += "<text x=\"" + fmt(Plot::kLeft - 6) + "\" y=\"" + fmt(plot.y(v) + 4) +
           "\" text-anchor=\"end\">" + fmt(v) + "</text>";
  }
  for (size_t i = 0; i < axis.commits.size(); ++i) {  // one tick a commit, its hash below
    const std::string& c = axis.commits[i];
    svg += "<text transform=\"translate(" + fmt(plot.x(double(i)) + 4) + " " +
           fmt(Plot::kHeight - Plot::kBottom + 12) + ") rotate(-50)\" text-anchor=\"end\">" +
           "<title>" + html_text(axis.subject.at(c)) + "</title>" + c.substr(0, 7) + "</text>";
  }
  for (const Finding& f : findings) {  // change points between their two commits
    if (f.case_name != case_name || f.metric != metric) continue;
    const double at = (plot.x(double(axis.position.at(f.last_before))) +
                       plot.x(double(axis.position.at(f.first_after)))) /
                      2;
    const std::string colour = f.regression() ? "#d62728" : "#2ca02c";
    svg += "<line class=\"change\" x1=\"" + fmt(at) + "\" x2=\"" + fmt(at) + "\" y1=\"" +
           fmt(Plot::kTop) + "\" y2=\"" + fmt(Plot::kHeight - Plot::kBottom) + "\" stroke=\"" +
           colour + "\" stroke-dasharray=\"5 3\" stroke-width=\"2\"/>";
    svg += "<text x=\"" + fmt(at + 3) + "\" y=\"" + fmt(Plot::kTop + 10) + "\" fill=\"" + colour +
           "\">" + fmt(100 * f.change.change(), "%+.1f") + " %</text>";
  }
  for (size_t h = 0; h < hosts.size(); ++h) {
    const char* colour = kHostColours[h % std::size(kHostColours)];
    std::map<size_t, std::vector<double>> runs;  // each commit's run medians, by position
    for (const SeriesPoint& p : hosts[h]->points) {
      const size_t at = axis.position.at(p.run.commit);
      for (double v : p.result.repetitions)
        svg += "<circle cx=\"" + fmt(plot.x(double(at))) + "\" cy=\"" + fmt(plot.y(v)) +
               "\" r=\"2\" fill=\"" + colour + "\" fill-opacity=\"0.35\"/>";
      runs[at].push_back(p.result.value);
    }
    std::string line;
    for (auto& [at, values] : runs) {
      std::sort(values.begin(), values.end());
      const size_t n = values.size();
      const double median = n % 2 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2;
      line += fmt(plot.x(double(at))) + "," + fmt(plot.y(median)) + " ";
    }
    svg += "<polyline fill=\"none\" stroke=\"" + std::string(colour) +
           "\" stroke-width=\"1.5\" points=\"" + line + "\"/>";
    svg += "<text x=\"" + fmt(Plot::kLeft) + "\" y=\"" + fmt(30 + 12.0 * double(h)) + "\" fill=\"" +
           colour + "\">" + html_text(hosts[h]->host_class) + "</text>";
  }
  return svg + "</svg>\n";
}

// Sets data-charts and data-drawn on the body: how many charts there are, and how many the
// browser laid out with a line and their points.
constexpr const char* kDrawnCheck = R"(<script>
const charts = Array.from(document.querySelectorAll('svg.chart'));
document.body.dataset.charts = charts.length;
document.body.dataset.drawn = charts.filter(c => {
  const box = c.getBBox();
  return box.width > 0 && box.height > 0 && c.querySelector('polyline') &&
         c.querySelectorAll('circle').length > 0;
}).length;
</script>
)";

std::string summary(const std::vector<Finding>& findings, const DashboardOptions& o,
                    const CommitAxis& axis) {
  size_t from = 0;
  if (!o.since.empty()) {
    const auto it = std::find_if(axis.commits.begin(), axis.commits.end(),
                                 [&](const std::string& c) { return c.rfind(o.since, 0) == 0; });
    DLF_CHECK(it != axis.commits.end(), "the dashboard's --since ", o.since,
              " is no commit of the history");
    from = size_t(it - axis.commits.begin()) + 1;
  }
  std::string html =
      "<h2>Changes" +
      (o.since.empty() ? std::string(" in the history") : " since " + html_text(o.since)) +
      "</h2>\n";
  std::string rows;
  for (const Finding& f : findings) {
    if (axis.position.at(f.first_after) < from) continue;
    rows += std::string("<tr class=\"") + (f.regression() ? "regression" : "improvement") +
            "\"><td>" + (f.regression() ? "regression" : "improvement") + "</td><td>" +
            html_text(f.case_name) + "</td><td>" + html_text(f.metric) + "</td><td>" +
            f.last_before.substr(0, 7) + "..." + f.first_after.substr(0, 7) + " " +
            html_text(f.after_subject.substr(0, 70)) + "</td><td>" +
            fmt(100 * f.change.change(), "%+.1f") + " %</td><td>" + fmt(f.change.mean_before) +
            " → " + fmt(f.change.mean_after) + " " + html_text(f.unit) + "</td><td>" +
            fmt(f.change.p_value, "%.2g") + "</td><td>" + fmt(f.load_before, "%.1f") + " / " +
            fmt(f.load_after, "%.1f") + "</td><td>" + html_text(f.host_class) + "</td></tr>\n";
  }
  if (rows.empty()) return html + "<p>None.</p>\n";
  return html +
         "<table><tr><th>what</th><th>case</th><th>metric</th><th>commits</th><th>change</th>"
         "<th>means</th><th>p</th><th>load before / after</th><th>host</th></tr>\n" +
         rows + "</table>\n";
}

}  // namespace

std::string render_dashboard(const std::vector<Series>& series,
                             const std::vector<Finding>& findings, const DashboardOptions& o) {
  const CommitAxis axis(series);
  std::string html =
      "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>" + html_text(o.title) +
      "</title>\n<style>body{font-family:sans-serif;margin:1.5em}table{border-collapse:collapse}"
      "td,th{border:1px solid #ccc;padding:2px 6px}tr.regression td:first-child{color:#d62728}"
      "tr.improvement td:first-child{color:#2ca02c}</style></head>\n<body>\n<h1>" +
      html_text(o.title) + "</h1>\n<p>" + std::to_string(axis.commits.size()) + " commits, " +
      std::to_string(series.size()) +
      " series. Points: every repetition of a run; lines: each commit's median run; dashed: change "
      "points (red slower, green faster) from E-divisive means with a t-test.</p>\n";
  html += summary(findings, o, axis);
  std::map<std::pair<std::string, std::string>, std::vector<const Series*>> charts;
  std::vector<std::pair<std::string, std::string>> order;
  for (const Series& s : series) {
    const auto key = std::make_pair(s.case_name, s.metric);
    if (charts[key].empty()) order.push_back(key);
    charts[key].push_back(&s);
  }
  html += "<h2>Series</h2>\n";
  for (const auto& key : order) html += chart(key.first, key.second, charts[key], findings, axis);
  return html + kDrawnCheck + "</body></html>\n";
}

void write_dashboard(const std::string& path, const std::vector<Series>& series,
                     const std::vector<Finding>& findings, const DashboardOptions& o) {
  replace_file(path, "dashboard", render_dashboard(series, findings, o));
}

}  // namespace dlf::perf
