// The suite's tiers and the cases a run names.
#include <dlf/perf/suite.h>

#include "test_util.h"

using namespace dlf::perf;

TEST_CASE("tiers: quick within full, peaks first in both") {
  const std::vector<SuiteCase> quick = cases_of(Tier::quick), full = cases_of(Tier::full);
  CHECK(quick.size() < full.size());
  CHECK(quick.front().peak);
  for (const SuiteCase& c : quick) CHECK(c.tier == Tier::quick);
  CHECK(parse_tier("full") == Tier::full);
  dlf::test::check_error([] { parse_tier("medium"); }, {"'medium'", "quick or full"});
}

TEST_CASE("cases by name prefix keep the peaks; a prefix that names nothing is an error") {
  const std::vector<SuiteCase> c = cases_of(Tier::quick, {"group_norm"});
  REQUIRE(c.size() == 3);
  CHECK(c[0].peak);
  CHECK(c[1].peak);
  CHECK(c[2].name == "group_norm forward f32 [8,64,32,32] g32");
  CHECK(cases_of(Tier::quick, {"softmax"}).empty() == false);  // a full case, asked for by name
  dlf::test::check_error([] { cases_of(Tier::quick, {"nothing"}); }, {"nothing", "--list"});
}
