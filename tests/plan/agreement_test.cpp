// The planner against runs on sim devices: the same layout, ZeRO stage, offload and recompute
// trained in process (train::train_rank on N sim ranks) and planned on the one meta device
// (plan::plan_gpt, plan::plan_replica). The run's figures are its metrics' step 2: the worst
// rank's simulated step time and peak memory.
#include <dlf/device/sim_device.h>
#include <dlf/models/registry.h>
#include <dlf/plan/plan.h>
#include <dlf/train/run.h>
#include <dlf/train/trainer.h>

#include <cstdio>
#include <sstream>

#include "test_util.h"

namespace dlf {
namespace {

constexpr const char* kSpec = "a100-40gb";

struct Figures {
  double step_s = 0, peak_bytes = 0;
};

double field(const std::string& line, const std::string& name) {
  const size_t at = line.find("\"" + name + "\":");
  REQUIRE(at != std::string::npos);
  return std::stod(line.substr(at + name.size() + 3));
}

// One configuration, as `dlf train` and `dlf plan` take it.
struct Setup {
  std::string model;
  parallel::Layout layout;
  int64_t batch = 8, micro_batch = 0, seq = 32;
  int zero = 0;
  plan::Offload offload = plan::Offload::none;
  autograd::Recompute recompute = autograd::Recompute::none;
  DType precision = DType::f32;
};

std::string label(const Setup& s) {
  return s.model + " dp" + std::to_string(s.layout.dp) + " tp" + std::to_string(s.layout.tp) +
         " pp" + std::to_string(s.layout.pp) + " zero" + std::to_string(s.zero) + " offload " +
         plan::offload_name(s.offload) + " " + autograd::recompute_name(s.recompute) + " " +
         dtype_name(s.precision);
}

// Step 2 of a run of `s` on its sim devices.
Figures run_on_sim(const Setup& s) {
  train::RunConfig run;
  run.model = s.model;
  run.steps = 2;
  run.batch = s.batch;
  run.seq = s.seq;
  train::apply_recipe(run, {});
  const models::Family& family = models::family_of(run.model);
  const models::TrainData data = train::load_data(run);
  const nn::NamedTensors initial = train::initial_state(run);
  std::vector<Device> devices = parallel::devices_of(DeviceType::sim, s.layout.devices());
  for (Device d : devices) {
    sim::configure(d, sim_preset(kSpec));
    sim::reset(d);
  }
  std::ostringstream metrics;
  parallel::run_ranks(devices, [&](parallel::Communicator& world) {
    train::train_rank(world, {.run = run,
                              .family = family,
                              .layout = s.layout,
                              .micro_batch = s.micro_batch,
                              .part = {.zero = s.zero,
                                       .offload_params = s.offload == plan::Offload::params,
                                       .recompute = s.recompute},
                              .offload_optimizer = s.offload != plan::Offload::none,
                              .precision = s.precision,
                              .data = data,
                              .initial = initial,
                              .evaluate = false,
                              .metrics = &metrics});
  });
  std::istringstream lines(metrics.str());
  for (std::string line; std::getline(lines, line);)
    if (line.find("\"step\":2,") != std::string::npos)
      return {field(line, "sim_step_ms") / 1e3, field(line, "sim_peak_bytes")};
  FAIL("no step 2 in the metrics: " << metrics.str());
  return {};
}

Figures plan_of(const Setup& s) {
  const models::Family& family = models::family_of(s.model);
  if (!family.gpt) {
    const plan::ReplicaPlan p = plan::plan_replica({.model = s.model,
                                                    .dp = s.layout.dp,
                                                    .spec = sim_preset(kSpec),
                                                    .global_batch = s.batch,
                                                    .seq = s.seq,
                                                    .dtype = s.precision,
                                                    .recompute = s.recompute,
                                                    .zero = s.zero,
                                                    .offload = s.offload});
    return {p.step_s, double(p.peak_bytes)};
  }
  const plan::Plan p = plan::plan_gpt(
      {.model = models::gpt_config(s.model),
       .layout = s.layout,
       .spec = sim_preset(kSpec),
       .global_batch = s.batch,
       .micro_batch =
           s.micro_batch > 0 ? s.micro_batch : train::default_micro_batch(s.layout, s.batch),
       .seq = s.seq,
       .dtype = s.precision,
       .recompute = s.recompute,
       .zero = s.zero,
       .offload = s.offload});
  return {p.step_s, double(p.worst.peak_bytes)};
}

void check_agreement(const std::vector<Setup>& setups) {
  for (const Setup& s : setups) {
    CAPTURE(label(s));
    const Figures run = run_on_sim(s), planned = plan_of(s);
    MESSAGE(label(s) << ": planned peak " << planned.peak_bytes << " run " << run.peak_bytes
                     << "; planned step " << planned.step_s * 1e3 << " ms run " << run.step_s * 1e3
                     << " ms");
    CHECK(planned.peak_bytes == doctest::Approx(run.peak_bytes).epsilon(0.05));
    CHECK(planned.step_s == doctest::Approx(run.step_s).epsilon(0.10).scale(0));
  }
}

using autograd::Recompute;
using plan::Offload;

}  // namespace

TEST_CASE("plan agrees with a run on sim devices: gpt-nano data-parallel, ZeRO 0-3, offload") {
  std::vector<Setup> setups;
  for (int zero = 0; zero <= 3; ++zero)
    setups.push_back({.model = "gpt-nano", .layout = {.dp = 2}, .zero = zero});
  setups.push_back(
      {.model = "gpt-nano", .layout = {.dp = 2}, .zero = 1, .offload = Offload::optimizer});
  setups.push_back(
      {.model = "gpt-nano", .layout = {.dp = 2}, .zero = 3, .offload = Offload::params});
  setups.push_back(
      {.model = "gpt-nano", .layout = {.dp = 2}, .zero = 2, .recompute = Recompute::full});
  // two micro-batches: the gradients accumulate whole, reduced after the second
  setups.push_back({.model = "gpt-nano", .layout = {.dp = 2}, .micro_batch = 2, .zero = 2});
  // ZeRO-3's blocks released after each micro-batch's backward, gathered again for the next
  setups.push_back({.model = "gpt-nano", .layout = {.dp = 2}, .micro_batch = 2, .zero = 3});
  setups.push_back({.model = "gpt-nano", .layout = {.dp = 2}, .zero = 1, .precision = DType::bf16});
  check_agreement(setups);
}

TEST_CASE("plan agrees with a run on sim devices: gpt-nano over tp and pp") {
  check_agreement(
      {{.model = "gpt-nano", .layout = {.dp = 2, .tp = 2}},
       {.model = "gpt-nano", .layout = {.pp = 2}},
       {.model = "gpt-nano", .layout = {.dp = 2, .pp = 2}, .zero = 2},
       {.model = "gpt-nano", .layout = {.dp = 2, .pp = 2}, .zero = 3},
       {.model = "gpt-nano", .layout = {.pp = 2}, .precision = DType::bf16},
       // the tied embedding's gradient part goes down to its offloaded shard
       {.model = "gpt-nano", .layout = {.dp = 2, .pp = 2}, .zero = 3, .offload = Offload::params},
       {.model = "gpt-nano", .layout = {.tp = 2, .pp = 2}, .recompute = Recompute::selective},
       // four stages, planned in pipelines of three (the first, a middle and the last stage
       // with their neighbours)
       {.model = "gpt-mini", .layout = {.pp = 4}, .batch = 8, .micro_batch = 1}});
}

TEST_CASE("plan_replica agrees with a run on sim devices: bert-tiny, ZeRO 0-3") {
  std::vector<Setup> setups;
  for (int zero = 0; zero <= 3; ++zero)
    setups.push_back({.model = "bert-tiny", .layout = {.dp = 2}, .zero = zero});
  check_agreement(setups);
}

TEST_CASE("plan_replica agrees with a run on sim devices: vit-tiny, unet-tiny, llama-nano") {
  check_agreement(
      {{.model = "vit-tiny", .layout = {.dp = 2}, .batch = 4},
       {.model = "vit-tiny", .layout = {.dp = 2}, .batch = 4, .zero = 3},
       {.model = "unet-tiny", .layout = {.dp = 2}, .batch = 4, .zero = 2},
       {.model = "unet-tiny",
        .layout = {.dp = 2},
        .batch = 4,
        .zero = 1,
        .offload = Offload::optimizer},
       {.model = "llama-nano", .layout = {.dp = 2}, .zero = 1},
       {.model = "llama-nano", .layout = {.dp = 2}, .zero = 3, .offload = Offload::params},
       {.model = "llama-nano",
        .layout = {.dp = 2},
        .recompute = Recompute::full,
        .precision = DType::bf16}});
}

}  // namespace dlf
