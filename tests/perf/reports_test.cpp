#include <dlf/perf/reports.h>

#include "test_util.h"

namespace dlf::perf {

TEST_CASE("reports: a result's line, with its share of the peak and its ratio to the peer") {
  Result r;
  r.case_name = "matmul f32 64";
  r.value = 1.5;
  r.headline = 350.25;
  r.headline_unit = "GFLOP/s";
  CHECK(describe(r) ==
        "matmul f32 64                                    1.5000 ms       350.2 GFLOP/s\n");
  r.normalised = 0.5;
  r.normalised_to = "matmul peak";
  r.peer_ratio = 1.25;
  CHECK(describe(r).ends_with("GFLOP/s  0.500 of matmul peak  1.25x the peer\n"));
}

TEST_CASE("reports: a change point, its commits, means, p-value and load") {
  Finding f;
  f.case_name = "op x";
  f.metric = "time";
  f.unit = "ms";
  f.change = {.p_value = 1e-4, .mean_before = 2, .mean_after = 2.5};
  f.last_before = "0123456789abcdef";
  f.first_after = "fedcba9876543210";
  f.load_before = 1;
  f.load_after = 1.5;
  CHECK(describe(f, true) ==
        "regression  op x [time] 0123456789ab..fedcba987654 +25.0 %: 2 -> 2.5 ms a call "
        "(p 0.0001, confidence 99.9900 %, load 1.0 -> 1.5)  <- the newest commit\n");
  f.change.mean_after = 1.5;
  CHECK(
      describe(f, false).starts_with("improvement op x [time] 0123456789ab..fedcba987654 -25.0 %"));
}

TEST_CASE("reports: an A/B comparison as a line and as JSON") {
  CaseComparison c;
  c.case_name = "add";
  c.time = {.ratio = 1.1, .low = 1.05, .high = 1.15};
  c.cpu_time = {.ratio = 1.2, .low = 1.1, .high = 1.3};
  c.verdict = "slower";
  CHECK(describe(c) ==
        "add                                          slower B/A cpu 1.200 [1.100, "
        "1.300]  wall 1.100 [1.050, 1.150]");
  CHECK(to_json_line(c, "aaa", "bbb", 10, "cpu_time") ==
        R"({"bench":"compare","case":"add","a":"aaa","b":"bbb","rounds":10,"metric":"cpu_time",)"
        R"("verdict":"slower","time_ratio":1.1,"time_low":1.05,"time_high":1.15,)"
        R"("cpu_time_ratio":1.2,"cpu_time_low":1.1,"cpu_time_high":1.3})");
}

}  // namespace dlf::perf
