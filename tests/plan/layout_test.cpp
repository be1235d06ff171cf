#include <dlf/plan/host_memory.h>
#include <dlf/plan/layout.h>

#include "plan/layout_query.h"
#include "test_util.h"

namespace dlf {
namespace {

using test::layout_query;

bool same(const parallel::Layout& a, const parallel::Layout& b) {
  return a.dp == b.dp && a.tp == b.tp && a.pp == b.pp;
}

}  // namespace

TEST_CASE("layout: a given one is taken, dp the rest of the devices, and checked") {
  plan::LayoutQuery q = layout_query(8);
  q.tp = 2;
  const plan::LayoutChoice c = plan::choose_layout(q);
  CHECK(same(c.layout, {.dp = 4, .tp = 2, .pp = 1}));
  CHECK(c.table.empty());
  q.tp = 3;
  test::check_error([&] { plan::choose_layout(q); },
                    {"tp 3 x pp 1 = 3 ranks per replica do not divide the 8 devices"});
  q.tp = 2;
  q.dp = 3;
  test::check_error([&] { plan::choose_layout(q); },
                    {"dp 3 x tp 2 x pp 1 = 6 ranks, but there are 8 devices"});
  // ZeRO-2 and a family without a pipeline are data-parallel
  q = layout_query(4);
  q.run.zero = 2;
  CHECK(same(plan::choose_layout(q).layout, {.dp = 4}));
  q = layout_query(4);
  q.model = "vit-tiny";
  CHECK(same(plan::choose_layout(q).layout, {.dp = 4}));
}

TEST_CASE("layout: planned, the fastest that fits the devices and the host") {
  const plan::LayoutQuery q = layout_query(4);
  const std::vector<plan::Plan> plans = plan::rank_layouts(q.run, 4);
  const plan::LayoutChoice c = plan::choose_layout(q);
  CHECK(same(c.layout, plans.front().options.layout));
  CHECK(c.refusal.empty());
  CHECK(c.table.find("layout planned on 4 meta devices of a100-40gb") == 0);
  const std::string chosen = "dp " + std::to_string(c.layout.dp) + " x tp " +
                             std::to_string(c.layout.tp) + " x pp " + std::to_string(c.layout.pp);
  const size_t row = c.table.find(chosen);
  REQUIRE(row != std::string::npos);
  CHECK(c.table.find("<- chosen") > row);
  CHECK(c.table.find("<- chosen") < c.table.find('\n', row));
  // A host that holds only the second: it is chosen, the first said not to fit the host
  plan::LayoutQuery small = q;
  const double second = plan::host_memory_needed(plans[1]);
  small.host_available = second / 0.9;
  REQUIRE(plan::host_memory_needed(plans[0]) > second);
  CHECK(same(plan::choose_layout(small).layout, plans[1].options.layout));
  CHECK(plan::choose_layout(small).table.find("does not fit the host") != std::string::npos);
  // cpu ranks: the most data parallelism that fits
  plan::LayoutQuery cpu = q;
  cpu.cpu = true;
  CHECK(same(plan::choose_layout(cpu).layout, {.dp = 4}));
}

TEST_CASE("layout: nothing fits, and the refusal says whether the devices or the host") {
  SimSpec tiny = sim_preset("a100-40gb");
  tiny.name = "tiny";
  tiny.memory_bytes = 1 << 20;
  const plan::LayoutChoice devices = plan::choose_layout(layout_query(4, tiny));
  CHECK(devices.refusal ==
        "gpt-mini does not fit 4 devices of tiny in any dp x tp x pp layout: use more devices or "
        "a smaller --batch");
  CHECK(devices.table.find("does not fit the device") != std::string::npos);
  plan::LayoutQuery host = layout_query(4);
  host.host_available = 1 << 20;
  CHECK(plan::choose_layout(host).refusal.find("gpt-mini on 4 devices (at best, as ") == 0);
}

}  // namespace dlf
