// The GPT planner's runs of a pipeline stage on the plan device (stage_runs.h says what each is).
#include <dlf/core/autocast.h>
#include <dlf/device/device_memory.h>
#include <dlf/device/sim_device.h>
#include <dlf/models/gpt_parallel.h>
#include <dlf/parallel/planning_communicator.h>
#include <dlf/train/rank_step.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <numeric>

#include "common.h"
#include "stage_runs.h"

namespace dlf::plan::internal {

StageRun run_stage(const StageShape& s, const SimSpec& spec) {
  reset_plan_device(spec);
  const Device d = kPlanDevice;
  parallel::PlanningCommunicator tp(d, 0, s.tp, "tp");
  std::unique_ptr<models::ParallelGPT> model;
  {
    DefaultDeviceGuard on_plan_device(d);
    MemoryScope scope(MemoryCategory::parameters);  // master weights in f32 (bf16: autocast)
    model = std::make_unique<models::ParallelGPT>(s.c, tp, s.stage, s.stages, s.chunks);
  }
  model->recompute(s.recompute);
  StageRun run;
  for (const Tensor& p : model->parameters()) run.parameters += p.numel();
  Allocator& memory = allocator_for(d);
  sim::Timeline& clock = sim::timeline(d);

  double t = clock.now();
  Tensor out, input;
  {
    MemoryScope scope(MemoryCategory::activations);
    AutocastGuard autocast(autocast_for(s.dtype, d));
    const Tensor idx = Tensor::empty({s.batch, s.seq}, DType::i64, d);
    if (!model->first) {  // the activations received from the previous stage
      input = Tensor::empty({s.batch, s.seq, s.c.dim}, model->residual_dtype(), d);
      input.requires_grad_();
      out = input;
    }
    for (int chunk = 0; chunk < s.chunks; ++chunk) out = model->forward(out, idx, idx, chunk);
  }
  run.forward_s = clock.now() - t;
  run.activation_bytes = memory.stats().live_by[static_cast<int>(MemoryCategory::activations)];
  t = clock.now();
  if (model->last) {
    out.backward();
  } else {  // the gradient arriving from the next stage
    out.backward(Tensor::empty(out.shape(), out.dtype(), d));
  }
  run.backward_s = clock.now() - t;
  run.tp_comm_s = tp.seconds().busy;
  return run;
}

// The micro-batches stage `stage` of `pp` runs: the fewest whose passes reach the schedule's
// steady state — a forward after a backward, the warm-up's activations held and the gradients
// accumulating — or the plan's when fewer; GPipe, whose forwards all come first, two (the
// gradients accumulate, the activations of the rest are added after). And how many more a
// second run takes (interleaved: a multiple of the stages), whose difference is a micro-batch's
// time in the steady state.
int64_t micro_batches_more(const PlanOptions& o) {
  return o.schedule == PipelineSchedule::interleaved ? o.layout.pp : 1;
}
int64_t micro_batches_run(const PlanOptions& o, int pp, int stage, int64_t m) {
  if (o.schedule == PipelineSchedule::gpipe) return std::min<int64_t>(m, 2);
  const int64_t more = micro_batches_more(o);
  for (int64_t k = more; k < m; k += more) {
    const int64_t warmup = parallel::warmup_forwards(o.schedule, pp, stage, o.virtual_stages, k);
    if (k * o.virtual_stages >= warmup + 2) return k;
  }
  return m;
}

// Chunks of micro-batches stage `stage` of `pp` holds at once out of m: the warm-up's forwards
// and one more (run_pipeline), each a share of a micro-batch's activations by its blocks.
double micro_batches_held(const PlanOptions& o, int pp, int stage,
                          const std::vector<int>& chunk_layers, int64_t m) {
  const int chunks = o.virtual_stages;
  const int layers = std::accumulate(chunk_layers.begin(), chunk_layers.end(), 0);
  const int in_flight = int(std::min<int64_t>(
      parallel::warmup_forwards(o.schedule, pp, stage, chunks, m) + 1, m * chunks));
  double held = 0;
  for (int k = 0; k < in_flight; ++k) {
    const int v = parallel::pipeline_pass(o.schedule, k, pp, chunks, true).chunk;
    held += layers > 0 ? double(chunk_layers[size_t(v)]) / layers : 1.0 / chunks;
  }
  return held;
}

Position run_position(const PlanOptions& o, int stage) {
  const int pp = o.layout.pp;
  if (o.schedule == PipelineSchedule::interleaved || pp <= 3) {
    Position all{.stages = std::vector<int>(size_t(pp)), .at = stage};
    std::iota(all.stages.begin(), all.stages.end(), 0);
    if (stage > 0 && stage < pp - 1) all.at = pp - 2;
    return all;
  }
  if (stage == 0) return {{0, 1, pp - 1}, 0};
  if (stage == pp - 1) return {{0, pp - 2, pp - 1}, 2};
  return {{pp - 3, pp - 2, pp - 1}, 1};
}

RankRun run_rank_step(const PlanOptions& o, const nn::NamedTensors& whole, const Position& at,
                      int64_t micro_batches) {
  reset_plan_device(o.spec);
  const train::PartOptions part{.micro_batches = int(micro_batches),
                                .schedule = o.schedule,
                                .virtual_stages = o.virtual_stages,
                                .zero = o.zero,
                                .offload_params = o.offload == Offload::params,
                                .recompute = o.recompute};
  const std::unique_ptr<parallel::Mesh> mesh = planning_mesh(o.layout, at.stages, at.at);
  std::unique_ptr<train::RankModel> model;
  {
    DefaultDeviceGuard on_plan_device(kPlanDevice);
    MemoryScope parameters(MemoryCategory::parameters);
    model = train::make_pipeline_model(o.model, *mesh, whole, part);
  }
  train::RankStep step(
      std::move(model), *mesh,
      {.part = part, .offload_optimizer = o.offload != Offload::none, .precision = o.dtype});
  // The tokens and their targets on the host, as a run's batch; on the plan device only their
  // shapes matter.
  const int64_t rows = o.micro_batch * micro_batches;
  const std::vector<Tensor> batch = {Tensor::empty({rows, o.seq}, DType::i64, kCPU),
                                     Tensor::empty({rows, o.seq}, DType::i64, kCPU)};
  Allocator& memory = allocator_for(kPlanDevice);
  sim::Timeline& clock = sim::timeline(kPlanDevice);
  RankRun run;
  run.micro_batches = micro_batches;
  for (int i = 0; i < 2; ++i) {
    memory.reset_peak();
    const double start = clock.now();
    const parallel::CommSeconds dp = mesh->dp().seconds();
    const double p2p = mesh->pp().seconds().busy;
    StepMeter meter(*mesh, clock);
    step.zero_grad();
    {
      AutocastGuard autocast(autocast_for(o.dtype, kPlanDevice));
      (void)step.model().run_step(batch);
    }
    (void)step.clip_gradients();
    run.parts = meter.stop();
    MemoryStats stats = memory.stats();
    run.peak_step = stats.peak_bytes;
    run.at_peak_step = stats.at_peak_by;
    const double reduced = clock.now();
    run.p2p_s = mesh->pp().seconds().busy - p2p;
    const parallel::CommSeconds dp_now = mesh->dp().seconds();
    run.dp = {dp_now.busy - dp.busy, dp_now.exposed - dp.exposed, dp_now.queued - dp.queued};
    memory.reset_peak();
    step.update();
    stats = memory.stats();
    run.peak_update = stats.peak_bytes;
    run.at_peak_update = stats.at_peak_by;
    run.forward_backward_s = reduced - start;
    run.update_s = clock.now() - reduced;
  }
  return run;
}

// What grows by the blocks of a stage (memory, time, communication) grows by the same for each:
// a + t · (b - a), field by field, from the runs at two depths.
double extrapolate(double a, double b, double t) { return a + t * (b - a); }
int64_t extrapolate(int64_t a, int64_t b, double t) {
  return std::llround(extrapolate(double(a), double(b), t));
}
template <typename T, size_t N>
std::array<T, N> extrapolate(const std::array<T, N>& a, const std::array<T, N>& b, double t) {
  std::array<T, N> r{};
  for (size_t i = 0; i < N; ++i) r[i] = extrapolate(a[i], b[i], t);
  return r;
}
RankRun extrapolate(const RankRun& a, const RankRun& b, double t) {
  return {.micro_batches = a.micro_batches,
          .peak_step = extrapolate(a.peak_step, b.peak_step, t),
          .peak_update = extrapolate(a.peak_update, b.peak_update, t),
          .at_peak_step = extrapolate(a.at_peak_step, b.at_peak_step, t),
          .at_peak_update = extrapolate(a.at_peak_update, b.at_peak_update, t),
          .forward_backward_s = extrapolate(a.forward_backward_s, b.forward_backward_s, t),
          .update_s = extrapolate(a.update_s, b.update_s, t),
          .p2p_s = extrapolate(a.p2p_s, b.p2p_s, t),
          .dp = {extrapolate(a.dp.busy, b.dp.busy, t), extrapolate(a.dp.exposed, b.dp.exposed, t),
                 extrapolate(a.dp.queued, b.dp.queued, t)},
          .parts = {extrapolate(a.parts.seconds, b.parts.seconds, t),
                    extrapolate(a.parts.flops, b.parts.flops, t),
                    extrapolate(a.parts.bytes, b.parts.bytes, t)}};
}
// A stage's parts over its m micro-batches: the run's, and what the run with more took more for
// each of the others (as its busy time is).
PartSeconds parts_over(const RankRun& ranked, const RankRun& more, int64_t m) {
  const double t =
      double(m - ranked.micro_batches) / double(more.micro_batches - ranked.micro_batches);
  return {extrapolate(ranked.parts.seconds, more.parts.seconds, t),
          extrapolate(ranked.parts.flops, more.parts.flops, t),
          extrapolate(ranked.parts.bytes, more.parts.bytes, t)};
}
StageRuns extrapolate(const StageRuns& a, const StageRuns& b, double t) {
  const StageRun& x = a.stage;
  const StageRun& y = b.stage;
  return {.stage = {.parameters = extrapolate(x.parameters, y.parameters, t),
                    .activation_bytes = extrapolate(x.activation_bytes, y.activation_bytes, t),
                    .forward_s = extrapolate(x.forward_s, y.forward_s, t),
                    .backward_s = extrapolate(x.backward_s, y.backward_s, t),
                    .tp_comm_s = extrapolate(x.tp_comm_s, y.tp_comm_s, t)},
          .ranked = extrapolate(a.ranked, b.ranked, t),
          .more = extrapolate(a.more, b.more, t),
          .held = a.held};
}

// `c` cut for a pipeline of `pp` stages of `chunks` chunks whose stage `at` holds `blocks` in
// its chunks (virtual stages at, pp + at, ...); the others, whose ranks a plan does not build,
// one each.
GPTConfig cut_for(GPTConfig c, int pp, int chunks, int at, const std::vector<int>& blocks) {
  c.pipeline_split.assign(size_t(pp * chunks), 1);
  for (int v = 0; v < chunks; ++v) c.pipeline_split[size_t(v * pp + at)] = blocks[size_t(v)];
  c.layers = std::accumulate(c.pipeline_split.begin(), c.pipeline_split.end(), int64_t(0));
  return c;
}

}  // namespace dlf::plan::internal
