#include <dlf/device/sim_device.h>
#include <dlf/models/registry.h>
#include <dlf/plan/breakdown.h>
#include <dlf/plan/plan.h>

#include "test_util.h"

namespace dlf {
namespace {

using plan::Layout;
using plan::PlanOptions;
using plan::StepPart;

PlanOptions options(const models::GPTConfig& model, Layout layout, const std::string& spec,
                    int64_t batch, int64_t seq = 64) {
  return {.model = model,
          .layout = layout,
          .spec = sim_preset(spec),
          .global_batch = batch,
          .micro_batch = 1,
          .seq = seq};
}

}  // namespace

TEST_CASE("plan breakdown: the parts, each measured on the stage's run, sum to the step") {
  using autograd::Recompute;
  struct Case {
    Layout layout;
    int64_t batch = 8;
    int zero = 0;
    Recompute recompute = Recompute::none;
    plan::PipelineSchedule schedule = plan::PipelineSchedule::one_f_one_b;
    int virtual_stages = 1;
    bool estimate = false;
  };
  for (const Case& k : std::vector<Case>{
           {.layout = {.dp = 4}},
           {.layout = {.dp = 2, .tp = 2}, .zero = 3},
           {.layout = {.dp = 2, .pp = 2}, .zero = 1, .recompute = Recompute::full},
           {.layout = {.tp = 2, .pp = 2},
           .schedule = plan::PipelineSchedule::interleaved,
           .virtual_stages = 2},
           {.layout = {.dp = 2, .tp = 2}, .recompute = Recompute::selective, .estimate = true}}) {
    PlanOptions o = options(models::gpt_config("gpt-small"), k.layout, "h100-80gb", k.batch);
    o.zero = k.zero;
    o.recompute = k.recompute;
    o.schedule = k.schedule;
    o.virtual_stages = k.virtual_stages;
    o.estimate = k.estimate;
    const plan::Plan p = plan::plan_gpt(o);
    CAPTURE(plan::describe(p));
    const plan::StepBreakdown& b = p.breakdown;
    CHECK(std::abs(b.total() - p.step_s) <= 1e-9 * p.step_s);
    for (double s : b.seconds) CHECK(s >= 0);
    CHECK(b.at(StepPart::matmul) > 0);
    CHECK(b.at(StepPart::optimizer) == p.optimizer_s);
    CHECK(b.at(StepPart::bubble) == p.fill_s);
    CHECK((b.at(StepPart::tp_comm) > 0) == (k.layout.tp > 1));
    // recomputation is its own share: there only when asked for
    CHECK((b.at(StepPart::recompute) > 0) == (k.recompute != Recompute::none));
  }
}

TEST_CASE("plan breakdown: dp 64 of small micro-batches over 100 Gb/s Ethernet waits for dp") {
  const plan::Plan p =
      plan::plan_gpt(options(models::gpt_config("gpt-small"), {.dp = 64}, "l4-24gb", 64));
  CAPTURE(plan::describe(p));
  CHECK(p.breakdown.largest() == StepPart::dp_comm);
  CHECK(p.breakdown.dp_link == "Ethernet");
  CHECK(p.breakdown.dp_network);
  CHECK(p.breakdown.at(StepPart::dp_comm) > 0.5 * p.step_s);
  CHECK(plan::limit_line(p).starts_with(
      "limited by the collectives of dp over Ethernet (12.5 GB/s a device): "));
}

TEST_CASE("plan breakdown: a wide model in f32 on one device is limited by its matmuls") {
  models::GPTConfig wide = models::gpt_config("gpt-nano");
  wide.layers = 2;
  wide.dim = 4096;
  wide.heads = 32;
  wide.context = 512;
  const plan::Plan p = plan::plan_gpt(options(wide, {}, "a100-40gb", 4, 512));
  CAPTURE(plan::describe(p));
  CHECK(p.breakdown.largest() == StepPart::matmul);
  CHECK(p.breakdown.at(StepPart::matmul) > 0.7 * p.step_s);
  const std::string line = plan::limit_line(p);
  CHECK(line.starts_with("limited by matmul compute: "));
  // A100 matmuls in f32 reach 87 % of 19.5 TFLOP/s (the preset's large-kernel efficiency)
  const plan::StepBreakdown& b = p.breakdown;
  const double reached = b.flops[size_t(StepPart::matmul)] / b.at(StepPart::matmul) / 19.5e12;
  CHECK(reached == doctest::Approx(0.87).epsilon(0.03));
  CHECK(line.find("% of peak FLOP/s") != std::string::npos);
}

TEST_CASE("plan breakdown: 8 stages and one micro-batch a step are limited by the bubble") {
  const plan::Plan p =
      plan::plan_gpt(options(models::gpt_config("gpt-small"), {.pp = 8}, "a100-40gb", 1));
  CAPTURE(plan::describe(p));
  CHECK(p.breakdown.largest() == StepPart::bubble);
  CHECK(plan::limit_line(p).starts_with("limited by the pipeline bubble"));
}

TEST_CASE("link_crossed: tp inside a node over its links, dp across nodes over the network") {
  const SimSpec h100 = sim_preset("h100-80gb");  // 8 devices a node
  bool network = true;
  CHECK(plan::link_crossed(h100, 1, 8, &network) == "NVLink 4");
  CHECK_FALSE(network);
  CHECK(plan::link_crossed(h100, 8, 2, &network) == "InfiniBand NDR");
  CHECK(network);
  CHECK(plan::link_crossed(h100, 4, 2) == "NVLink 4");  // devices 0 and 4: one node
  const SimSpec trn1 = sim_preset("trn1");              // 32 NeuronCores a node
  CHECK(plan::link_crossed(trn1, 8, 4) == "NeuronLink-v2");
  CHECK(plan::link_crossed(trn1, 8, 5) == "EFA");
}

}  // namespace dlf
