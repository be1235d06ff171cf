#include <dlf/plan/run_choice.h>
#include <dlf/plan/search.h>

#include <algorithm>

#include "plan/layout_query.h"
#include "test_util.h"

namespace dlf {
namespace {

// gpt-mini on 4 devices of `memory` bytes, no layout or memory flag given.
plan::LayoutQuery query(int64_t memory) {
  SimSpec spec = sim_preset("a100-40gb");
  spec.memory_bytes = memory;
  return test::layout_query(4, spec);
}

// The smallest peak of the layouts choose_layout() plans (no memory flags, default
// micro-batches), and of every configuration the search has.
std::pair<int64_t, int64_t> least_peaks(const plan::LayoutQuery& q) {
  int64_t layouts = INT64_MAX, any = INT64_MAX;
  for (const plan::Plan& p : plan::rank_layouts(q.run, q.devices))
    layouts = std::min(layouts, p.worst.peak_bytes);
  plan::StageCache cache;
  for (const plan::PlanOptions& o : plan::configurations({.run = q.run, .devices = q.devices}))
    any = std::min(any, plan::plan_gpt(o, &cache).worst.peak_bytes);
  return {layouts, any};
}

}  // namespace

TEST_CASE("run choice: a layout that fits as asked is choose_layout's, its flags untouched") {
  const plan::LayoutQuery q = query(sim_preset("a100-40gb").memory_bytes);
  const plan::RunChoice c = plan::choose_run(q, {});
  CHECK_FALSE(c.searched);
  CHECK(c.layout.refusal.empty());
  CHECK(c.flags.recompute == autograd::Recompute::none);
  CHECK(c.flags.zero == 0);
  CHECK(c.micro_batch == 0);
  CHECK(c.layout.table.find("layout planned on 4 meta devices") == 0);
}

TEST_CASE("run choice: when no layout fits as asked, the search picks memory flags that fit") {
  const auto [layouts, any] = least_peaks(query(1));
  // memory saving lowers the peak below every plain layout's, with 5 % to spare
  REQUIRE(double(any) < 0.95 * double(layouts - 1));
  plan::LayoutQuery q = query(layouts - 1);
  REQUIRE(!plan::choose_layout(q).refusal.empty());  // nothing fits without memory flags
  const plan::RunChoice c = plan::choose_run(q, {});
  REQUIRE(c.searched);
  CHECK(c.layout.refusal.empty());
  CHECK(c.layout.layout.devices() == 4);
  // the chosen configuration, planned again, fits: it saves memory by some flag or a smaller
  // micro-batch than a pipeline's default
  plan::PlanOptions chosen = q.run;
  chosen.layout = c.layout.layout;
  chosen.micro_batch = c.micro_batch;
  chosen.recompute = c.flags.recompute;
  chosen.zero = c.flags.zero;
  chosen.offload = c.flags.offload;
  const plan::Plan p = plan::plan_gpt(chosen);
  CHECK(p.fits);
  CHECK(double(p.worst.peak_bytes) <= 0.95 * double(q.run.spec.memory_bytes));
  CHECK(c.layout.table.find("chosen: " + train::layout_text(c.layout.layout) + ", " +
                            plan::flags_str(c.flags) + " --micro-batch " +
                            std::to_string(c.micro_batch) + " (peak ") == 0);
  CHECK(c.layout.table.find("\nlayout planned on 4 meta devices") != std::string::npos);
  // a flag the command line gave is kept: with --zero 0 given, no ZeRO stage is chosen
  q.run.zero = 0;
  const plan::RunChoice kept = plan::choose_run(q, {.zero = true});
  CHECK((!kept.searched || kept.flags.zero == 0));
  // below the least peak of all nothing fits: choose_layout's refusal stands
  const plan::RunChoice none = plan::choose_run(query(any - 1), {});
  CHECK_FALSE(none.searched);
  CHECK(none.layout.refusal.find("does not fit 4 devices") != std::string::npos);
}

}  // namespace dlf
