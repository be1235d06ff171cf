#include <dlf/plan/search.h>

#include <algorithm>

#include "test_util.h"

namespace dlf {
namespace {

plan::SearchOptions gpt_nano_on(int devices, int64_t capacity) {
  SimSpec spec = sim_preset("a100-40gb");
  spec.memory_bytes = capacity;
  return {.run = {.model = models::gpt_config("gpt-nano"),
                  .layout = {},
                  .spec = spec,
                  .global_batch = 8,
                  .seq = 32},
          .devices = devices};
}

// Every configuration planned on its own (no cache, no pruning), fitting `capacity`.
std::vector<plan::Plan> exhaustive(const plan::SearchOptions& s) {
  std::vector<plan::Plan> all;
  for (const plan::PlanOptions& o : plan::configurations(s)) all.push_back(plan::plan_gpt(o));
  return all;
}

std::string name(const plan::Plan& p) {
  return "dp " + std::to_string(p.options.layout.dp) + " " + plan::configuration_flags(p);
}

}  // namespace

TEST_CASE("search: the fastest configuration that fits, as planning every one of them finds") {
  // gpt-nano (4 heads, 2 blocks) on 4 devices, a batch of 8: dp x tp x pp 4x1x1, 2x2x1, 2x1x2,
  // 1x4x1, 1x2x2, 1x1x3 is not 4; each micro-batch dividing a replica's rows; recompute x ZeRO x
  // offload
  const std::vector<plan::Plan> all = exhaustive(gpt_nano_on(4, 0));
  CHECK(all.size() == plan::configurations(gpt_nano_on(4, 0)).size());
  std::vector<int64_t> peaks;
  for (const plan::Plan& p : all) peaks.push_back(p.worst.peak_bytes);
  std::sort(peaks.begin(), peaks.end());
  const plan::Plan fastest = *std::min_element(all.begin(), all.end(), plan::better);
  // Devices that hold: everything; all but the fastest; a tenth of the configurations; none
  for (int64_t capacity :
       {int64_t(0), fastest.worst.peak_bytes - 1, peaks[peaks.size() / 10], peaks.front() - 1}) {
    CAPTURE(capacity);
    std::vector<plan::Plan> fitting = all;
    for (plan::Plan& p : fitting) p.fits = capacity == 0 || p.worst.peak_bytes <= capacity;
    const plan::Plan expected = *std::min_element(fitting.begin(), fitting.end(), plan::better);
    const plan::SearchResult found = plan::search(gpt_nano_on(4, capacity));
    CHECK(found.candidates == int64_t(all.size()));
    CHECK(found.planned <= found.candidates);
    if (!expected.fits) {
      CHECK_FALSE(found.best);
      CHECK(found.least.worst.peak_bytes == peaks.front());
      continue;
    }
    REQUIRE(found.best);
    CHECK(name(*found.best) == name(expected));
    CHECK(found.best->step_s == expected.step_s);  // the cached stage runs: the same numbers
    CHECK(found.best->worst.peak_bytes == expected.worst.peak_bytes);
    CHECK(found.best->worst.peak_bytes <=
          capacity + (capacity == 0) * found.best->worst.peak_bytes);
  }
  // The smaller devices prune: a layout whose most saving configuration fits nowhere is planned
  // no further.
  CHECK(plan::search(gpt_nano_on(4, peaks.front() - 1)).planned < int64_t(all.size()) / 4);
}

TEST_CASE("search: estimates choose, whole stages confirm") {
  // gpt-small's 12 blocks are estimated from runs of 2 and 3; with ZeRO-3, offloaded parameters
  // and two micro-batches the estimate's peak is low (plan_test)
  plan::SearchOptions s{.run = {.model = models::gpt_config("gpt-small"),
                                .layout = {},
                                .spec = sim_preset("a100-40gb"),
                                .global_batch = 8,
                                .seq = 64},
                        .devices = 2};
  s.allowed = [](const plan::PlanOptions& o) {
    return o.layout.dp == 2 && o.zero == 3 && o.offload == plan::Offload::params &&
           o.micro_batch == 2 && o.recompute == autograd::Recompute::none;
  };
  plan::PlanOptions o = plan::configurations(s).at(0);
  const plan::Plan whole = plan::plan_gpt(o);
  o.estimate = true;
  const plan::Plan estimate = plan::plan_gpt(o);
  REQUIRE(estimate.worst.peak_bytes < whole.worst.peak_bytes);
  // devices the estimate fits and the whole stage does not
  s.run.spec.memory_bytes = (estimate.worst.peak_bytes + whole.worst.peak_bytes) / 2;
  plan::SearchResult found = plan::search(s);
  CHECK_FALSE(found.best);
  CHECK(found.least.worst.peak_bytes == whole.worst.peak_bytes);
  s.run.spec.memory_bytes = whole.worst.peak_bytes;
  found = plan::search(s);
  REQUIRE(found.best);
  CHECK_FALSE(found.best->options.estimate);
  CHECK(found.best->worst.peak_bytes == whole.worst.peak_bytes);
  CHECK(found.best->step_s == whole.step_s);
}

TEST_CASE("search: its flags are dlf plan's, and a batch no layout divides is refused") {
  plan::Plan p;
  p.options.layout = {.dp = 6, .tp = 8, .pp = 64};
  p.options.recompute = autograd::Recompute::full;
  p.options.micro_batch = 1;
  CHECK(plan::configuration_flags(p) == "--tp 8 --pp 64 --recompute full --micro-batch 1");
  p.options.zero = 3;
  p.options.offload = plan::Offload::params;
  p.options.recompute = autograd::Recompute::none;
  CHECK(plan::configuration_flags(p) == "--tp 8 --pp 64 --zero 3 --offload params --micro-batch 1");
  plan::SearchOptions odd = gpt_nano_on(5, 0);
  odd.run.global_batch = 3;
  test::check_error([&] { plan::search(odd); }, {"no dp x tp x pp layout of 5 devices divides"});
}

}  // namespace dlf
