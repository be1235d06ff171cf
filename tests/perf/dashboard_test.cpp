// The dashboard's page: a chart per case and metric, every repetition a point, change points
// marked, the summary since a commit; nothing loaded from the network.
#include <dlf/perf/dashboard.h>

#include "test_util.h"

using namespace dlf::perf;

namespace {

size_t count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

// 8 commits of one case on one host, 3 repetitions each, 20 % slower from commit 5 on; the
// same case on a second host class for the first 4 commits.
std::vector<Series> history() {
  std::vector<Series> s(2);
  for (int host = 0; host < 2; ++host) {
    s[size_t(host)] = {host == 0 ? "CPU A | 2 cores | avx2" : "CPU B | 8 cores | avx512f",
                       "group_norm",
                       "cpu_time",
                       "ms",
                       {}};
    for (int c = 0; c < (host == 0 ? 8 : 4); ++c) {
      SeriesPoint p;
      p.run.commit = std::string(40, char('a' + c));
      p.run.commit_date = "2026-11-2" + std::to_string(c) + "T00:00:00+00:00";
      p.run.subject = "commit <" + std::to_string(c) + ">";
      p.run.load_1m = 2;
      const double level = (c >= 5 ? 1.2 : 1.0) * (host == 0 ? 1 : 0.5);
      p.result.repetitions = {level * 0.99, level, level * 1.01};
      p.result.value = level;
      s[size_t(host)].points.push_back(p);
    }
  }
  return s;
}

}  // namespace

TEST_CASE("the dashboard draws every repetition, each host's medians and the change point") {
  const std::vector<Series> series = history();
  const std::vector<Finding> findings = find_changes(series, "all");
  REQUIRE(findings.size() == 1);
  CHECK(findings[0].regression());
  CHECK(findings[0].first_after == std::string(40, 'f'));
  CHECK(findings[0].last_before == std::string(40, 'e'));
  CHECK(findings[0].load_after == 2);
  const std::string html = render_dashboard(series, findings, {.title = "t"});
  CHECK(count(html, "<svg class=\"chart\"") == 1);  // one case and metric, both hosts on it
  CHECK(count(html, "<circle") == 3 * 8 + 3 * 4);
  CHECK(count(html, "<polyline") == 2);
  CHECK(count(html, "class=\"change\"") == 1);
  CHECK(html.find("+20.0 %") != std::string::npos);
  CHECK(html.find("commit &lt;5&gt;") != std::string::npos);  // subjects escaped
  CHECK(html.find("CPU B | 8 cores") != std::string::npos);
  CHECK(html.find("src=") == std::string::npos);   // nothing loaded: no script, image or
  CHECK(html.find("href=") == std::string::npos);  // style from elsewhere
  CHECK(count(html, "<tr class=\"regression\"") == 1);
}

TEST_CASE("the summary lists the changes after --since only") {
  const std::vector<Series> series = history();
  const std::vector<Finding> findings = find_changes(series, "all");
  CHECK(count(render_dashboard(series, findings, {.since = "dddd"}), "<tr class=") == 1);
  const std::string after = render_dashboard(series, findings, {.since = "ffff"});
  CHECK(count(after, "<tr class=") == 0);
  CHECK(after.find("<p>None.</p>") != std::string::npos);
  dlf::test::check_error([&] { render_dashboard(series, findings, {.since = "zzz"}); },
                         {"--since zzz", "no commit"});
}
