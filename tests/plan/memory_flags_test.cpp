#include <algorithm>

#include <dlf/plan/memory_flags.h>

#include "test_util.h"

namespace dlf {
namespace {

using autograd::Recompute;

plan::FlagsQuery query(const std::string& model, int dp, int64_t capacity = 0) {
  SimSpec spec = sim_preset("a100-40gb");
  if (capacity > 0) spec.memory_bytes = capacity;
  return {.model = model, .layout = {.dp = dp}, .spec = spec, .batch = 4, .seq = 32};
}

}  // namespace

TEST_CASE("memory flags: every combination the layout allows, those that fit fastest first") {
  // dp 2: recompute none, selective, full x (ZeRO 0, 1, 2 with or without the optimizer
  // offloaded; ZeRO-3 also with its parameter shards)
  const std::vector<plan::FlagsPlan> all = plan::plan_memory_flags(query("gpt-nano", 2));
  CHECK(all.size() == 27);
  for (size_t i = 1; i < all.size(); ++i) CHECK(all[i - 1].step_s <= all[i].step_s);
  // each plan is plan_gpt's for those flags
  CHECK(all.front().fits);
  const auto plain = std::find_if(all.begin(), all.end(), [](const plan::FlagsPlan& p) {
    return plan::flags_str(p.flags) == "none";
  });
  REQUIRE(plain != all.end());
  const plan::Plan direct = plan::plan_gpt({.model = models::gpt_config("gpt-nano"),
                                            .layout = {.dp = 2},
                                            .spec = sim_preset("a100-40gb"),
                                            .global_batch = 4,
                                            .micro_batch = 1,
                                            .seq = 32});
  CHECK(plain->peak_bytes == direct.worst.peak_bytes);
  CHECK(plain->step_s == direct.step_s);
  // one replica: no ZeRO, so recompute x offload none or optimizer
  CHECK(plan::plan_memory_flags(query("gpt-nano", 1)).size() == 6);
  // the other families' whole replicas too
  CHECK(plan::plan_memory_flags(query("vit-tiny", 2)).size() == 27);
}

TEST_CASE("memory flags: a device too small for the run's flags gets the fastest that fit") {
  const std::vector<plan::FlagsPlan> roomy = plan::plan_memory_flags(query("gpt-nano", 2));
  const int64_t plain = roomy.front().peak_bytes;  // the fastest's
  const std::vector<plan::FlagsPlan> all = plan::plan_memory_flags(query("gpt-nano", 2, plain - 1));
  const plan::FlagsPlan& best = all.front();
  REQUIRE(best.fits);
  CHECK(best.peak_bytes <= plain - 1);
  CHECK(plan::flags_str(best.flags) != plan::flags_str(roomy.front().flags));
  for (const plan::FlagsPlan& p : all) {  // the fitting ones first, the fastest of them first
    if (p.fits) CHECK(p.step_s >= best.step_s);
    if (!p.fits) CHECK(p.peak_bytes > plain - 1);
  }
  const std::string hint =
      plan::fitting_flags_hint(query("gpt-nano", 2, plain - 1), roomy.front().flags);
  CHECK(hint == "planned to fit with " + plan::flags_str(best.flags) + " (peak " +
                    format_bytes(double(best.peak_bytes)) + " of " +
                    format_bytes(double(plain - 1)) + ")");
  // the flags that fit are the run's own: the planner missed something
  CHECK(plan::fitting_flags_hint(query("gpt-nano", 2), roomy.front().flags)
            .find("the plan says these flags fit") == 0);
  // nothing fits: the least, and what else to change
  const std::string none = plan::fitting_flags_hint(query("gpt-nano", 2, 1000), {});
  CHECK(none.find(
            "no --recompute, --zero or --offload makes this layout fit 1000 B (the least, ") == 0);
  CHECK(none.find("more devices, a smaller batch or a smaller model") != std::string::npos);
}

TEST_CASE("memory flags: --offload params needs --zero 3, and the flags in words") {
  CHECK(plan::offload_flag("params", 3) == plan::Offload::params);
  CHECK(plan::offload_flag("optimizer", 0) == plan::Offload::optimizer);
  test::check_error([] { plan::offload_flag("params", 2); }, {"it needs --zero 3 (got --zero 2)"});
  test::check_error([] { plan::offload_flag("disk", 0); }, {"unknown offload 'disk'"});
  CHECK(plan::flags_str({Recompute::selective, 3, plan::Offload::params}) ==
        "--recompute selective --zero 3 --offload params");
  CHECK(plan::flags_str({}) == "none");
}

}  // namespace dlf
