#include <dlf/device/sim_device.h>
#include <dlf/models/registry.h>
#include <dlf/plan/plan.h>

#include "test_util.h"

namespace dlf {
namespace {

using plan::Layout;
using plan::PlanOptions;

PlanOptions options(const std::string& model, Layout layout, int64_t batch = 0) {
  return {.model = models::gpt_config(model),
          .layout = layout,
          .spec = sim_preset("a100-40gb"),
          .global_batch = batch,
          .micro_batch = 2,
          .seq = 64};
}

int64_t bytes(const plan::StagePlan& s, MemoryCategory c) { return s.memory[static_cast<int>(c)]; }

}  // namespace

TEST_CASE("plan: the parameters of the model built on meta; GPT-3's 175B") {
  // V·C + T·C + L·(12C² + 13C) + 2C with V 50257, T 2048, L 96, C 12288.
  CHECK(plan::plan_gpt(options("gpt3-175b", {.tp = 8, .pp = 16})).parameters == 174'604'259'328);
  CHECK(plan::plan_gpt(options("gpt-1t", {.tp = 8, .pp = 64})).parameters / 1'000'000'000 == 1008);
}

TEST_CASE("plan: one device holds the model, its gradients and Adam's two moments") {
  const plan::Plan p = plan::plan_gpt(options("gpt-nano", {}));
  const int64_t n = models::GPT(models::gpt_config("gpt-nano")).num_parameters();
  CHECK(p.parameters == n);
  CHECK(p.worst.parameters == n);
  CHECK(bytes(p.worst, MemoryCategory::parameters) == 4 * n);
  // One micro-batch a step: the peak is at the forward's end, before any gradient exists (a
  // step starts without them); with two, the second's peak holds the first's.
  CHECK(bytes(p.worst, MemoryCategory::gradients) == 0);
  const plan::Plan accumulating = plan::plan_gpt(options("gpt-nano", {}, 4));
  CHECK(accumulating.micro_batches == 2);
  CHECK(bytes(accumulating.worst, MemoryCategory::gradients) == 4 * n);
  CHECK(accumulating.worst.peak_bytes == p.worst.peak_bytes + 4 * n);
  CHECK(bytes(p.worst, MemoryCategory::optimizer_state) == 8 * n);
  CHECK(bytes(p.worst, MemoryCategory::activations) > 0);
  CHECK(p.micro_batches == 1);
  CHECK(p.bubble_fraction == 0);
  CHECK(p.fits);
  CHECK(p.step_s == doctest::Approx(p.stage_s + p.optimizer_s));
  CHECK(p.optimizer_s == p.worst.optimizer_s);  // one stage
  CHECK(p.tokens_per_s == doctest::Approx(2 * 64 / p.step_s));
  // Model FLOPs: 6N + 12·L·T·C a token (T = 64 here), per device.
  const models::GPTConfig c = models::gpt_config("gpt-nano");
  const double per_token = 6.0 * double(n) + 12.0 * c.layers * 64 * c.dim;
  CHECK(p.flops_per_device == doctest::Approx(per_token * 2 * 64 / p.step_s));
  CHECK(p.mfu == doctest::Approx(p.flops_per_device / sim_preset("a100-40gb").peak_flops_f32));
}

TEST_CASE("plan: the meta step's time is the sim device's for the same model") {
  // gpt-nano forward + backward of [2, 64] on a real sim device, against the plan's stage.
  const Device dev{DeviceType::sim, 11};
  sim::configure(dev, sim_preset("a100-40gb"));
  manual_seed(1);
  models::GPT model(models::gpt_config("gpt-nano"));
  model.to(dev);
  const Tensor x = zeros({2, 64}, {.dtype = DType::i64, .device = dev});
  sim::reset(dev);
  model.loss(x, x).backward();
  const double measured = sim::timeline(dev).now();
  const plan::Plan p = plan::plan_gpt(options("gpt-nano", {}));
  // The plan runs the model's own stage (ParallelGPT, one rank): the same ops as GPT.
  CHECK(p.worst.forward_s + p.worst.backward_s == doctest::Approx(measured).epsilon(1e-12));
}

TEST_CASE("plan: tp collectives are the model's own, recomputed ones included") {
  // ParallelGPT over 2 ranks: 2 allreduces of [b, T, C] per block each way, one for the
  // embedding (forward) and the head (backward), 3 of [b, T] floats in the cross-entropy.
  // Full recompute runs each block's forward, and its 2 allreduces, again in backward.
  const plan::Plan none = plan::plan_gpt(options("gpt-mini", {.tp = 2}));
  PlanOptions o = options("gpt-mini", {.tp = 2});
  o.recompute = autograd::Recompute::full;
  const plan::Plan full = plan::plan_gpt(o);
  const SimSpec spec = sim_preset("a100-40gb");
  const int64_t L = models::gpt_config("gpt-mini").layers, C = models::gpt_config("gpt-mini").dim;
  auto allreduce = [&](double bytes) {
    return sim::collective_seconds(spec, sim::Collective::allreduce, bytes, std::vector<int>{0, 1});
  };
  const double boundary = 2.0 * 64 * double(C) * 4;
  CHECK(none.worst.tp_comm_s ==
        doctest::Approx(double(4 * L + 2) * allreduce(boundary) + 3 * allreduce(2.0 * 64 * 4)));
  CHECK(full.worst.tp_comm_s - none.worst.tp_comm_s ==
        doctest::Approx(double(2 * L) * allreduce(boundary)));
  // Under bf16 autocast the residual stream's allreduces carry 2-byte elements; the
  // cross-entropy's stay f32.
  o.recompute = autograd::Recompute::none;
  o.dtype = DType::bf16;
  const plan::Plan bf16 = plan::plan_gpt(o);
  CHECK(bf16.worst.tp_comm_s ==
        doctest::Approx(double(4 * L + 2) * allreduce(boundary / 2) + 3 * allreduce(2.0 * 64 * 4)));
}

TEST_CASE("plan: tensor and pipeline parallelism split the parameters; the bubble and 1F1B") {
  const plan::Plan one = plan::plan_gpt(options("gpt-mini", {}, 16));
  const plan::Plan tp2 = plan::plan_gpt(options("gpt-mini", {.tp = 2}, 16));
  const plan::Plan pp2 = plan::plan_gpt(options("gpt-mini", {.pp = 2}, 16));
  // A block's shard at tp 2: the four matrices (12C²) halve, as do c_attn's and c_fc's biases
  // (3C/2 + 2C); the LayerNorms (4C) and the row-parallel biases (2C) stay whole. The
  // vocabulary splits too; wpe and ln_f stay whole.
  const int64_t C = 384, L = 6, V = 256, T = 256;
  CHECK(tp2.worst.parameters ==
        L * (6 * C * C + 3 * C / 2 + 2 * C + 4 * C + 2 * C) + (V / 2) * C + T * C + 2 * C);
  CHECK(pp2.worst.layers == 3);
  CHECK(pp2.micro_batches == 8);
  // the fill and drain: the other stage's micro-batch, once
  const plan::StagePlan& other = pp2.stages.at(size_t(1 - pp2.slowest));
  CHECK(pp2.fill_s == other.micro_batch_s);
  CHECK(pp2.fill_s < pp2.stage_s);
  CHECK(pp2.bubble_fraction ==
        doctest::Approx(pp2.fill_s / (8 * pp2.stage_s + pp2.fill_s)).scale(0));
  CHECK(pp2.worst.in_flight == 2);
  CHECK(pp2.p2p_s > 0);
  CHECK(
      pp2.step_s ==
      doctest::Approx(8 * pp2.stage_s + pp2.fill_s + pp2.dp_exposed_s + pp2.optimizer_s).scale(0));
  CHECK(tp2.worst.tp_comm_s > 0);
  CHECK(one.worst.tp_comm_s == 0);
  PlanOptions gpipe = options("gpt-mini", {.pp = 2}, 16);
  gpipe.schedule = plan::PipelineSchedule::gpipe;
  const plan::Plan g = plan::plan_gpt(gpipe);
  CHECK(g.worst.in_flight == 8);
  CHECK(g.worst.peak_bytes > pp2.worst.peak_bytes);
  // Data parallelism adds a gradient allreduce over the dp group.
  const plan::Plan dp4 = plan::plan_gpt(options("gpt-mini", {.dp = 4}, 16));
  CHECK(dp4.dp_allreduce_s > 0);
  CHECK(one.dp_allreduce_s == 0);
}

TEST_CASE("plan: the interleaved schedule shrinks the bubble V-fold for more sends and memory") {
  const plan::Plan plain = plan::plan_gpt(options("gpt-mini", {.pp = 2}, 16));
  PlanOptions o = options("gpt-mini", {.pp = 2}, 16);
  o.schedule = plan::PipelineSchedule::interleaved;
  o.virtual_stages = 2;
  const plan::Plan p = plan::plan_gpt(o);
  // 8 micro-batches; the fill and drain take the other stage's micro-batch over V = 2: at most
  // (pp - 1) / V = 1/2 of the slowest's, V times less than 1F1B's
  CHECK(p.micro_batches == 8);
  CHECK(p.fill_s == doctest::Approx(p.stages[size_t(1 - p.slowest)].micro_batch_s / 2).scale(0));
  CHECK(p.fill_s <= 0.5 * p.stage_s);
  CHECK(p.bubble_fraction == doctest::Approx(p.fill_s / (8 * p.stage_s + p.fill_s)).scale(0));
  CHECK(p.bubble_fraction < plain.bubble_fraction);
  CHECK(p.step_s >= 8 * p.stage_s + p.fill_s + p.optimizer_s);
  // Each stage holds two chunks (virtual stages 0 and 2, or 1 and 3) of gpt_stage_blocks(4).
  CHECK(p.stages[0].layers + p.stages[1].layers == 6);
  // Stage 0's warm-up runs 2(pp - 1) + (V - 1)pp = 4 chunk forwards before its first backward:
  // 5 chunks of half a micro-batch held, against 1F1B's 2 micro-batches.
  CHECK(p.stages[0].in_flight == 5);
  CHECK(p.stages[0].peak_bytes > plain.stages[0].peak_bytes);
  // Four sends a micro-batch instead of two (both schedules give each stage 3 blocks, so the
  // compute is the same).
  CHECK(p.stage_s > plain.stage_s);
  CHECK(p.step_s < plain.step_s);

  o.global_batch = 6;  // 3 micro-batches: not a multiple of the 2 stages
  test::check_error([&] { plan::plan_gpt(o); }, {"micro-batches a multiple of them (got 3)"});
  o.schedule = plan::PipelineSchedule::one_f_one_b;
  o.global_batch = 16;
  test::check_error([&] { plan::plan_gpt(o); }, {"2 virtual stages need the interleaved"});
}

TEST_CASE("plan: a pipeline send is each tp rank's slice over its own link, then an allgather") {
  const plan::Plan p = plan::plan_gpt(options("gpt-mini", {.tp = 2, .pp = 2}, 16));
  const SimSpec spec = sim_preset("a100-40gb");
  const double boundary = 2.0 * 64 * 384 * 4;  // [micro-batch 2, seq 64, C 384] in f32
  const std::vector<int> pair = {0, 2}, tp = {0, 1};
  CHECK(p.p2p_s ==
        doctest::Approx(
            sim::collective_seconds(spec, sim::Collective::send_recv, boundary / 2, pair) +
            sim::collective_seconds(spec, sim::Collective::allgather, boundary, tp)));
}

TEST_CASE("plan: GPT-3 175B on 1024 devices in a moment, and what does not fit says so") {
  PlanOptions o = options("gpt3-175b", {.dp = 16, .tp = 8, .pp = 8}, 1536);
  o.micro_batch = 1;
  o.seq = 0;
  o.spec = sim_preset("h100-80gb");
  o.dtype = DType::bf16;
  const plan::Plan p = plan::plan_gpt(o);
  CHECK(p.micro_batches == 96);
  CHECK(p.worst.layers == 12);
  // bf16 mixed precision keeps 16 bytes per parameter (ZeRO's count): f32 master weights and
  // gradients, two f32 Adam moments — and at the peak the copy of the tied embedding's gradient
  // the pipeline's two ends sum.
  auto bytes = [&](MemoryCategory c) { return double(p.worst.memory[static_cast<int>(c)]); };
  const double n = double(p.worst.parameters);
  CHECK(bytes(MemoryCategory::parameters) == doctest::Approx(4 * n).epsilon(1e-3));
  CHECK(bytes(MemoryCategory::gradients) == doctest::Approx(4 * n).epsilon(0.05));
  CHECK(bytes(MemoryCategory::optimizer_state) == doctest::Approx(8 * n).epsilon(1e-3));
  // With 8 micro-batches' activations in flight it does not fit in 80 GB: Megatron-LM trained
  // this layout with activation recompute, and so it fits.
  CHECK_FALSE(p.fits);
  o.recompute = autograd::Recompute::full;
  const plan::Plan recomputed = plan::plan_gpt(o);
  CHECK(recomputed.fits);
  CHECK(recomputed.mfu > 0.1);
  CHECK(recomputed.mfu < 1);
  // Selective recompute keeps the matmuls' and attention's outputs: between the two in memory,
  // faster than full recompute (its matmuls do not run again).
  o.recompute = autograd::Recompute::selective;
  const plan::Plan selective = plan::plan_gpt(o);
  CHECK(selective.worst.peak_bytes > recomputed.worst.peak_bytes);
  CHECK(selective.worst.peak_bytes < p.worst.peak_bytes);
  CHECK(selective.step_s < recomputed.step_s);
  // In f32 the same model state and activations twice the bytes, but no bf16 copies of the
  // weights, which autocast keeps for the step (its temporaries).
  o.recompute = autograd::Recompute::full;
  o.dtype = DType::f32;
  const plan::Plan f32 = plan::plan_gpt(o);
  CHECK(bytes(MemoryCategory::activations) > 0);
  CHECK(f32.worst.memory[static_cast<int>(MemoryCategory::temporaries)] <
        recomputed.worst.memory[static_cast<int>(MemoryCategory::temporaries)] - n);
  test::check_error([] { plan::plan_gpt(options("gpt-nano", {.tp = 3})); },
                    {"tp 3 does not divide gpt-nano's 4 attention heads"});
  test::check_error([] { plan::plan_gpt(options("gpt-nano", {.pp = 4})); },
                    {"2 blocks and the head make at most 3 pipeline stages, not 4"});
  test::check_error([] { plan::plan_gpt(options("gpt-nano", {.dp = 2}, 3)); },
                    {"global batch 3 is not a multiple of dp x micro-batch = 4"});
}

TEST_CASE("rank_layouts: every layout that divides the model, the fastest that fits first") {
  PlanOptions o = options("gpt-mini", {}, 8);
  // gpt-mini: 6 heads (tp 1, 2), 6 blocks and the head (pp <= 7): of 8 devices, dp x tp x pp =
  // 8x1x1, 4x1x2, 2x1x4, 4x2x1, 2x2x2, 1x2x4.
  const std::vector<plan::Plan> all = plan::rank_layouts(o, 8);
  CHECK(all.size() == 6);
  REQUIRE(all.front().fits);
  for (size_t i = 1; i < all.size(); ++i) CHECK(all[i - 1].step_s <= all[i].step_s);
  for (const plan::Plan& p : all)
    CHECK(p.options.micro_batch == train::default_micro_batch(p.options.layout, 8));
  // A device too small for the fastest layout's peak: another layout is chosen, and fits.
  const plan::Plan fastest = all.front();
  o.spec.memory_bytes = fastest.worst.peak_bytes - 1;
  const std::vector<plan::Plan> small = plan::rank_layouts(o, 8);
  CHECK(small.front().fits);
  CHECK(small.front().options.layout.devices() == 8);
  CHECK_FALSE((small.front().options.layout.dp == fastest.options.layout.dp &&
               small.front().options.layout.tp == fastest.options.layout.tp &&
               small.front().options.layout.pp == fastest.options.layout.pp));
  test::check_error([&] { plan::rank_layouts(options("gpt-nano", {}, 3), 5); },
                    {"no dp x tp x pp layout of 5 devices divides gpt-nano"});
}

TEST_CASE("plan_replica: every family's own model, its memory by category and its sim time") {
  const SimSpec spec = sim_preset("a100-40gb");
  const Device dev{DeviceType::sim, 12};
  sim::configure(dev, spec);
  for (const std::string name : {"gpt-nano", "bert-tiny", "vit-tiny", "unet-tiny"}) {
    CAPTURE(name);
    const plan::ReplicaPlan p =
        plan::plan_replica({.model = name, .dp = 2, .spec = spec, .global_batch = 4, .seq = 32});
    CHECK(p.fits);
    CHECK(p.items_per_step == (p.unit == "tokens" ? 4 * 32 : 4));
    CHECK(p.activation_bytes > 0);
    CHECK(p.dp_allreduce_s > 0);
    CHECK(p.step_s == doctest::Approx(p.forward_s + p.backward_s + p.dp_exposed_s + p.optimizer_s));
    CHECK(p.mfu > 0);
    CHECK(p.mfu < 1);
    const int64_t n = p.parameters;
    CHECK(p.memory[static_cast<int>(MemoryCategory::parameters)] == 4 * n);
    CHECK(p.memory[static_cast<int>(MemoryCategory::optimizer_state)] == 8 * n);
    if (name == "vit-tiny") {
      // The same model's forward on a real sim device takes the plan's time: the same ops.
      manual_seed(1);
      models::VisionTransformer model(models::vit_config(name));
      model.to(dev);
      const Tensor x = zeros({2, 1, 28, 28}, {.device = dev});
      const Tensor y = zeros({2}, {.dtype = DType::i64, .device = dev});
      sim::reset(dev);
      (void)model.loss(x, y);
      CHECK(p.forward_s == doctest::Approx(sim::timeline(dev).now()));
      CHECK(n == model.num_parameters());
    }
  }
}

TEST_CASE("plan_replica agrees with the GPT planner on a data-parallel layout") {
  const PlanOptions o = options("gpt-mini", {.dp = 2}, 4);
  const plan::Plan gpt = plan::plan_gpt(o);
  const plan::ReplicaPlan any = plan::plan_replica(
      {.model = "gpt-mini", .dp = 2, .spec = o.spec, .global_batch = 4, .seq = 64});
  CHECK(any.parameters == gpt.parameters);
  CHECK(any.peak_bytes == doctest::Approx(double(gpt.worst.peak_bytes)).epsilon(0.05));
  // (the replica's backward is its step's less the forward and the update: clipping and the
  // buckets' copies in it; a GPT stage's is its bare backward)
  CHECK(any.forward_s == doctest::Approx(gpt.worst.forward_s).epsilon(0.05).scale(0));
  CHECK(any.step_s == doctest::Approx(gpt.step_s).epsilon(0.1).scale(0));
  CHECK(any.dp_allreduce_s == doctest::Approx(gpt.dp_allreduce_s));
  CHECK(any.items_per_s == doctest::Approx(gpt.tokens_per_s).epsilon(0.1));
}

TEST_CASE("plan: every stage is planned; the slowest is the bottleneck, the fullest the worst") {
  const plan::Plan p = plan::plan_gpt(options("gpt-mini", {.pp = 3}, 12));
  REQUIRE(p.stages.size() == 3);
  double slowest = 0;
  int64_t fullest = 0;
  for (size_t i = 0; i < p.stages.size(); ++i) {
    const plan::StagePlan& s = p.stages[i];
    CHECK(s.stage == int(i));
    // a micro-batch in the pipeline: the stage's forward and backward and its transfers
    CHECK(s.micro_batch_s > s.forward_s + s.backward_s);
    slowest = std::max(slowest, s.micro_batch_s);
    fullest = std::max(fullest, s.peak_bytes);
  }
  CHECK(p.stage_s == slowest);
  CHECK(p.stages.at(size_t(p.slowest)).micro_batch_s == p.stage_s);
  CHECK(p.worst.peak_bytes == fullest);
}

TEST_CASE("plan: ZeRO-1 and -2 shard the optimizer state and the gradients over dp") {
  PlanOptions o = options("gpt-nano", {.dp = 4}, 16);  // two micro-batches: gradients at the peak
  const plan::Plan plain = plan::plan_gpt(o);
  o.zero = 1;
  const plan::Plan one = plan::plan_gpt(o);
  o.zero = 2;
  const plan::Plan two = plan::plan_gpt(o);
  const int64_t n = models::GPT(models::gpt_config("gpt-nano")).num_parameters();
  CHECK(bytes(plain.worst, MemoryCategory::optimizer_state) == 8 * n);
  CHECK(bytes(one.worst, MemoryCategory::optimizer_state) == 8 * n / 4);
  CHECK(bytes(one.worst, MemoryCategory::gradients) == 4 * n);
  // Two micro-batches: DDP reduce-scatters once the last one's backward has made the gradients
  // final, so the second's forward runs with the first's whole gradients, as under ZeRO-1.
  CHECK(bytes(two.worst, MemoryCategory::gradients) == 4 * n);
  o.zero = 3;
  const plan::Plan three = plan::plan_gpt(o);
  const models::GPTConfig c = models::gpt_config("gpt-nano");
  const int64_t block = 4 * (12 * c.dim * c.dim + 13 * c.dim);
  const int64_t rest = 4 * (c.vocab + c.context + 2) * c.dim;
  // The shards, the rest whole, and two blocks whole: the running one and the one prefetched.
  CHECK(bytes(three.worst, MemoryCategory::parameters) == 4 * n / 4 + rest + 2 * block);
  CHECK(one.worst.peak_bytes == plain.worst.peak_bytes - 6 * n);
  // A quarter of AdamW's update, then the allgather of the updated parameters.
  CHECK(one.optimizer_s > plain.optimizer_s / 4);
  // One micro-batch: the peak is the end of forward, before any gradient, under either.
  o.micro_batch = 4;
  o.zero = 1;
  const plan::Plan one_whole = plan::plan_gpt(o);
  o.zero = 2;
  const plan::Plan two_whole = plan::plan_gpt(o);
  CHECK(bytes(one_whole.worst, MemoryCategory::gradients) == 0);
  CHECK(two_whole.worst.peak_bytes == one_whole.worst.peak_bytes);
  const plan::ReplicaPlan vit = plan::plan_replica(
      {.model = "vit-tiny", .dp = 4, .spec = o.spec, .global_batch = 8, .zero = 2});
  // as parallel::ZeroOptimizer shards it: a quarter of each moment, rounded up
  CHECK(vit.memory[static_cast<int>(MemoryCategory::optimizer_state)] ==
        8 * ((vit.parameters + 3) / 4));
}

TEST_CASE(
    "plan: under ZeRO-3 the peak moves toward the end of forward, where the activations are") {
  // Deep, narrow and a small vocabulary: unsharded, the peak is at the end of backward (the
  // parameters, their gradients and Adam's moments, 16 bytes each, outweigh the activations);
  // sharded over 8, the activations of the end of forward outweigh what is left.
  const models::GPTConfig c{
      .name = "deep", .vocab = 256, .context = 128, .layers = 24, .heads = 4, .dim = 256};
  PlanOptions o{
      .model = c, .layout = {.dp = 8}, .spec = sim_preset("a100-40gb"), .global_batch = 8};
  const plan::Plan plain = plan::plan_gpt(o);
  CHECK(bytes(plain.worst, MemoryCategory::activations) < plain.worst.activation_bytes);
  o.zero = 3;
  const plan::Plan three = plan::plan_gpt(o);
  CHECK(bytes(three.worst, MemoryCategory::activations) >
        bytes(plain.worst, MemoryCategory::activations));
  CHECK(bytes(three.worst, MemoryCategory::activations) > three.worst.activation_bytes / 2);
  CHECK(three.worst.peak_bytes >
        three.worst.activation_bytes + bytes(three.worst, MemoryCategory::optimizer_state));
  CHECK(three.worst.peak_bytes < plain.worst.peak_bytes);
}

TEST_CASE(
    "plan: offload takes the optimizer state, and ZeRO-3's parameter shards, off the device") {
  PlanOptions o = options("gpt-nano", {.dp = 4}, 8);
  o.zero = 3;
  const plan::Plan kept = plan::plan_gpt(o);
  o.offload = plan::Offload::optimizer;
  const plan::Plan optimizer = plan::plan_gpt(o);
  o.offload = plan::Offload::params;
  const plan::Plan params = plan::plan_gpt(o);
  const int64_t n = models::GPT(models::gpt_config("gpt-nano")).num_parameters();
  CHECK(bytes(kept.worst, MemoryCategory::optimizer_state) == 8 * n / 4);
  CHECK(bytes(optimizer.worst, MemoryCategory::optimizer_state) == 0);
  CHECK(bytes(params.worst, MemoryCategory::optimizer_state) == 0);
  // The shards leave; the parts gathered while the step runs stay.
  CHECK(bytes(params.worst, MemoryCategory::parameters) ==
        bytes(kept.worst, MemoryCategory::parameters) - 4 * n / 4);
  CHECK(params.worst.peak_bytes == optimizer.worst.peak_bytes - 4 * n / 4);
  CHECK(optimizer.optimizer_s > kept.optimizer_s);  // the copies over the host link
  CHECK(plan::describe(params).find("ZeRO-3, optimizer and parameters offloaded") !=
        std::string::npos);
  CHECK(plan::parse_offload("params") == plan::Offload::params);
  test::check_error([] { plan::parse_offload("gradients"); },
                    {"unknown offload 'gradients'", "none, optimizer or params"});
}

TEST_CASE("plan: an estimate (fewer blocks, extrapolated) = the whole stage's plan") {
  struct Case {
    Layout layout;
    int zero = 0;
    plan::Offload offload = plan::Offload::none;
    autograd::Recompute recompute = autograd::Recompute::none;
    DType dtype = DType::f32;
    int64_t batch = 8;
    bool peak_moves = false;  // the deep stage's peak comes at another moment
  };
  using autograd::Recompute;
  using plan::Offload;
  // gpt-small's blocks: 28 MB of gradients, two of them fill two 25 MB buckets; runs of 2 and 3
  // blocks a chunk stand for 12 (and the pipeline's 8 and 4; tp 2: 4 and 5 for 12)
  for (const Case& k : std::vector<Case>{
           {.layout = {.dp = 2}},
           {.layout = {.dp = 2}, .zero = 1, .offload = Offload::optimizer},
           {.layout = {.dp = 2}, .zero = 2, .recompute = Recompute::full},
           {.layout = {.dp = 2}, .zero = 3, .dtype = DType::bf16},
           // two micro-batches: at 2 and 3 blocks the peak is the head's logits, at 12 the
           // second backward's accumulating gradients (the estimate is 6 % low; search confirms)
           {.layout = {.dp = 2}, .zero = 3, .offload = Offload::params, .peak_moves = true},
           {.layout = {.dp = 2, .tp = 2}, .recompute = Recompute::selective},
           {.layout = {.dp = 2, .pp = 2}, .zero = 1, .batch = 32}}) {
    PlanOptions o = options("gpt-small", k.layout, k.batch);
    o.zero = k.zero;
    o.offload = k.offload;
    o.recompute = k.recompute;
    o.dtype = k.dtype;
    o.estimate = true;
    const plan::Plan sampled = plan::plan_gpt(o);
    o.estimate = false;
    const plan::Plan every = plan::plan_gpt(o);
    CAPTURE(plan::describe(every));
    CAPTURE(plan::describe(sampled));
    for (size_t s = 0; s < every.stages.size(); ++s) {
      const plan::StagePlan &a = sampled.stages[s], &b = every.stages[s];
      CHECK(a.parameters == b.parameters);
      if (!k.peak_moves)
        CHECK(double(a.peak_bytes) == doctest::Approx(double(b.peak_bytes)).epsilon(0.01));
      CHECK(a.activation_bytes == doctest::Approx(b.activation_bytes).epsilon(0.001));
      CHECK(a.micro_batch_s == doctest::Approx(b.micro_batch_s).epsilon(0.01).scale(0));
      CHECK(a.optimizer_s == doctest::Approx(b.optimizer_s).epsilon(0.01).scale(0));
    }
    CHECK(sampled.step_s == doctest::Approx(every.step_s).epsilon(0.01).scale(0));
    // (gradient buckets cut the blocks unevenly: a bucket's latency more or less)
    CHECK(sampled.dp_allreduce_s == doctest::Approx(every.dp_allreduce_s).epsilon(0.05).scale(0));
  }
}

}  // namespace dlf
