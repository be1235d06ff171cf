#include <dlf/core/autocast.h>
#include <dlf/core/op.h>
#include <dlf/device/device_memory.h>
#include <dlf/device/sim_device.h>
#include <dlf/json_line.h>
#include <dlf/models/family.h>
#include <dlf/models/gpt.h>
#include <dlf/models/gpt_parallel.h>
#include <dlf/models/registry.h>
#include <dlf/nn/optim/optimizer.h>
#include <dlf/parallel/planning_communicator.h>
#include <dlf/plan/plan.h>
#include <dlf/train/rank_step.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <memory>
#include <numeric>
#include <sstream>
#include <tuple>

#include "common.h"
#include "step_meter.h"

namespace dlf::plan {
namespace {

// One rank of one pipeline stage: which, and what it computes.
struct StageShape {
  const GPTConfig& c;
  int tp, stage, stages, chunks;
  int64_t batch, seq;
  DType dtype;
  autograd::Recompute recompute;
};

// The model's own stage (ParallelGPT over a planning tp group): forward and backward of one
// micro-batch through every chunk of the stage, on the plan device.
struct StageRun {
  int64_t parameters = 0, activation_bytes = 0;
  double forward_s = 0, backward_s = 0, tp_comm_s = 0;
};
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

// Where a stage's rank runs: the stages of the layout's pipeline it runs in, and its place
// among them. 1F1B and GPipe: three, the first, the last or a middle stage (as the last but
// one) with its neighbours, whose transfers cross the links a run's would — the fewest
// micro-batches to reach the steady state; what the stage holds more in the whole pipeline is
// added after. Interleaved, whose chunks pass through every stage: all of them.
struct Position {
  std::vector<int> stages;
  int at = 0;
};
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

// A rank of the stage as a run trains it: train::RankStep over the pipeline model
// (train::make_pipeline_model) on planning dp, tp and pp groups — DDP's allreduce overlapping
// the last micro-batch's backward or ZeRO's reduce-scatters, ZeroOptimizer's shards, FSDP's
// prefetched gathers, the offloaded optimizer's copies over the host link and its update on the
// host — run twice as the trainer runs it; the second step's peaks and times on the clock.
struct RankRun {
  int64_t micro_batches = 0;
  int64_t peak_step = 0, peak_update = 0;  // during forward and backward; the update
  BytesByCategory at_peak_step{}, at_peak_update{};
  double forward_backward_s = 0, update_s = 0, p2p_s = 0;
  parallel::CommSeconds dp;  // the step's data-parallel collectives
  PartSeconds parts;         // forward_backward_s's
};
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

// A stage's runs: its micro-batch alone, and its rank's steps with the micro-batches the run
// takes and with more, the share of a micro-batch's activations the first held at once.
struct StageRuns {
  StageRun stage;
  RankRun ranked, more;
  double held = 0;
};

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

}  // namespace

const char* offload_name(Offload offload) {
  switch (offload) {
    case Offload::none:
      return "none";
    case Offload::optimizer:
      return "optimizer";
    case Offload::params:
      return "params";
  }
  return "none";
}

Offload parse_offload(std::string_view name) {
  for (Offload o : {Offload::none, Offload::optimizer, Offload::params})
    if (name == offload_name(o)) return o;
  throw Error("unknown offload '" + std::string(name) + "': expected none, optimizer or params");
}

struct StageCache::Runs {
  std::map<std::tuple<std::string, bool, bool, std::vector<int>>, StageRun> made;
  // and the rank steps, by the stage run's key, the layout's dp and pp, ZeRO, offload, the
  // micro-batches run and how many of them the stage holds at once
  std::map<
      std::tuple<std::string, bool, bool, std::vector<int>, int, int, int, int, int64_t, double>,
      RankRun>
      steps;
  // the whole model's state on kMeta (shapes), which a rank's part takes its share of, by name
  std::map<std::string, nn::NamedTensors> wholes;
  std::map<std::string, int64_t> counts;  // and its parameters
};

StageCache::StageCache() : runs_(std::make_unique<Runs>()) {}
StageCache::~StageCache() = default;
int64_t StageCache::runs_made() const { return int64_t(runs_->made.size() + runs_->steps.size()); }

Plan plan_gpt(const PlanOptions& options, StageCache* cache) {
  Plan plan;
  plan.options = options;
  PlanOptions& o = plan.options;
  const GPTConfig& c = o.model;
  const Layout& l = o.layout;
  DLF_CHECK(l.dp > 0 && l.tp > 0 && l.pp > 0, "plan: dp, tp and pp must be positive");
  DLF_CHECK(c.heads % l.tp == 0, "plan: tp ", l.tp, " does not divide ", c.name, "'s ", c.heads,
            " attention heads");
  if (o.seq == 0) o.seq = c.context;
  DLF_CHECK(o.seq > 0 && o.seq <= c.context, "plan: seq ", o.seq, " is outside 1..", c.context);
  DLF_CHECK(o.micro_batch > 0, "plan: the micro-batch must be positive");
  if (o.global_batch == 0) o.global_batch = l.dp * o.micro_batch * (l.pp > 1 ? 4 * l.pp : 1);
  DLF_CHECK(o.global_batch % (l.dp * o.micro_batch) == 0, "plan: the global batch ", o.global_batch,
            " is not a multiple of dp x micro-batch = ", l.dp * o.micro_batch);
  plan.micro_batches = o.global_batch / (l.dp * o.micro_batch);
  const int chunks = o.virtual_stages;
  parallel::check_schedule(o.schedule, chunks, l.pp, plan.micro_batches);
  const std::vector<std::pair<int64_t, int64_t>> stage_blocks =
      models::gpt_stage_blocks(c, l.pp * chunks);
  const int64_t m = plan.micro_batches;

  // Every stage, each kind (first or not, last or not, its chunks' blocks) run once: in this
  // plan, or in the cache's earlier plans of the same model, tp, micro-batch and flags.
  StageCache local;
  StageCache::Runs& runs = *(cache ? *cache : local).runs_;
  // The model's parameters and a block's: GPTs built on kMeta (shapes only), counted once.
  auto count = [&](const GPTConfig& model) {
    const std::string name = model.name + " " + std::to_string(model.layers) + "x" +
                             std::to_string(model.dim) + " v" + std::to_string(model.vocab);
    if (!runs.counts.contains(name)) {
      DefaultDeviceGuard shapes_only(kMeta);
      runs.counts.emplace(name, models::GPT(model).num_parameters());
    }
    return runs.counts.at(name);
  };
  plan.parameters = count(c);
  auto whole = [&](const GPTConfig& model) -> const nn::NamedTensors& {
    const std::string name = model.name + " " + std::to_string(model.layers) + "x" +
                             std::to_string(model.dim) + " v" + std::to_string(model.vocab);
    if (!runs.wholes.contains(name)) {
      DefaultDeviceGuard shapes_only(kMeta);
      runs.wholes.emplace(name, models::GPT(model).state_dict());
    }
    return runs.wholes.at(name);
  };
  // The blocks a chunk of a deep stage is run with: enough that their gradients fill two of
  // DDP's buckets, the buckets in flight as in the deeper stage.
  GPTConfig one_more = c;
  ++one_more.layers;
  const int64_t block_bytes = (count(one_more) - plan.parameters) * 4 / l.tp;  // f32 gradients
  const int sampled = int(std::max<int64_t>(
      1, (2 * train::PartOptions{}.bucket_bytes + block_bytes - 1) / block_bytes));
  double busiest_s = 0;  // the stage whose micro-batches take longest, reductions included
  PartSeconds busiest;   // and where its time goes
  for (int stage = 0; stage < l.pp; ++stage) {
    const bool first = stage == 0, last = stage == l.pp - 1;
    std::vector<int> chunk_layers;  // the blocks of each of this stage's chunks
    for (int v = 0; v < chunks; ++v) {
      const auto [begin, end] = stage_blocks[size_t(v * l.pp + stage)];
      chunk_layers.push_back(int(end - begin));
    }
    const int layers = std::accumulate(chunk_layers.begin(), chunk_layers.end(), 0);
    const Position at = run_position(o, stage);
    const int pp_run = int(at.stages.size());
    const int64_t m_run = micro_batches_run(o, pp_run, at.at, m);
    // The stage's runs where it holds `blocks` in its chunks.
    auto stage_runs = [&](const std::vector<int>& blocks) {
      PlanOptions run = o;
      run.model = cut_for(c, pp_run, chunks, at.at, blocks);
      const std::string shape = c.name + " " + std::to_string(c.dim) + " " + o.spec.name + " tp" +
                                std::to_string(l.tp) + " b" + std::to_string(o.micro_batch) + " s" +
                                std::to_string(o.seq) + " " + dtype_name(o.dtype) + " " +
                                autograd::recompute_name(o.recompute) + " " +
                                parallel::schedule_name(o.schedule) + std::to_string(chunks) +
                                " pp" + std::to_string(pp_run);
      const auto key = std::make_tuple(shape, first, last, blocks);
      if (!runs.made.contains(key)) {
        runs.made.emplace(key, run_stage({run.model, l.tp, at.at, pp_run, chunks, o.micro_batch,
                                          o.seq, o.dtype, o.recompute},
                                         o.spec));
      }
      const double held = micro_batches_held(o, pp_run, at.at, blocks, m_run);
      auto rank_step = [&](int64_t micro_batches) -> const RankRun& {
        const auto step_key = std::tuple_cat(
            key,
            std::make_tuple(l.dp, l.pp, o.zero, static_cast<int>(o.offload), micro_batches, held));
        if (!runs.steps.contains(step_key))
          runs.steps.emplace(step_key, run_rank_step(run, whole(run.model), at, micro_batches));
        return runs.steps.at(step_key);
      };
      return StageRuns{.stage = runs.made.at(key),
                       .ranked = rank_step(m_run),
                       .more = rank_step(m_run + micro_batches_more(o)),
                       .held = held};
    };
    // A stage of many blocks: its runs with `sampled` and one more in each chunk, extrapolated
    // to its own (what grows with the blocks grows by the same for each).
    const bool deep =
        o.estimate && *std::min_element(chunk_layers.begin(), chunk_layers.end()) > sampled + 1;
    const StageRuns runs_of_stage =
        deep ? extrapolate(stage_runs(std::vector<int>(size_t(chunks), sampled)),
                           stage_runs(std::vector<int>(size_t(chunks), sampled + 1)),
                           double(layers - chunks * sampled) / chunks)
             : stage_runs(chunk_layers);
    const StageRun& run = runs_of_stage.stage;
    const RankRun& ranked = runs_of_stage.ranked;
    const RankRun& more = runs_of_stage.more;
    const double held_run = runs_of_stage.held;
    const double held = micro_batches_held(o, l.pp, stage, chunk_layers, m);
    // What the step holds beyond the micro-batches its run held (1F1B's warm-up).
    const int64_t more_activations = int64_t(double(run.activation_bytes) * (held - held_run));
    StagePlan s{.stage = stage,
                .layers = layers,
                .parameters = run.parameters,
                .activation_bytes = run.activation_bytes,
                .in_flight = int(std::min<int64_t>(
                    parallel::warmup_forwards(o.schedule, l.pp, stage, chunks, m) + 1, m * chunks)),
                .forward_s = run.forward_s,
                .backward_s = run.backward_s,
                .tp_comm_s = run.tp_comm_s,
                .optimizer_s = ranked.update_s};
    // Peak: forward and backward as the run had them with the activations of the micro-batches
    // it did not run, or the update — whichever is higher.
    const int64_t step_peak = ranked.peak_step + more_activations;
    if (step_peak >= ranked.peak_update) {
      s.peak_bytes = step_peak;
      s.memory = ranked.at_peak_step;
      s.memory[static_cast<int>(MemoryCategory::activations)] += more_activations;
    } else {
      s.peak_bytes = ranked.peak_update;
      s.memory = ranked.at_peak_update;
      s.peak_at_update = true;
    }
    // A micro-batch in the steady state (its forward and backward, tp's and the pipeline's
    // transfers, ZeRO-3's gathers, as they overlap): what the run with more of them took
    // longer. The stage's m micro-batches: the run's and that many more, the reductions' wait
    // after the last included.
    const double micro_s = (more.forward_backward_s - ranked.forward_backward_s) /
                           double(more.micro_batches - ranked.micro_batches);
    const double busy_s = ranked.forward_backward_s + double(m - ranked.micro_batches) * micro_s;
    s.micro_batch_s = micro_s;
    if (stage == 0 || micro_s > plan.stage_s) {
      plan.stage_s = micro_s;
      plan.slowest = stage;
      plan.p2p_s = ranked.p2p_s / double(ranked.micro_batches * 2 * chunks);
    }
    plan.optimizer_s = std::max(plan.optimizer_s, s.optimizer_s);
    if (stage == 0 || busy_s > busiest_s) {
      busiest_s = busy_s;
      plan.dp_allreduce_s = ranked.dp.busy;
      busiest = parts_over(ranked, more, m);
    }
    if (stage == 0 || s.peak_bytes > plan.worst.peak_bytes) plan.worst = s;
    plan.stages.push_back(std::move(s));
  }
  // The pipeline fills and drains through the other stages: a micro-batch of each, over V
  // chunks ((m - 1) of the slowest and one of every stage, as a pipeline of unequal stages has).
  for (const StagePlan& st : plan.stages)
    if (st.stage != plan.slowest) plan.fill_s += st.micro_batch_s / chunks;
  plan.bubble_fraction = plan.fill_s / (double(m) * plan.stage_s + plan.fill_s);
  // The busiest stage and the fill and drain; what the busiest's micro-batches leave of it is
  // the reductions' wait after the last.
  plan.step_s = busiest_s + plan.fill_s + plan.optimizer_s;
  plan.dp_exposed_s = std::max(0.0, busiest_s - double(m) * plan.stage_s);
  plan.breakdown = step_breakdown(o, busiest, plan.fill_s, plan.optimizer_s);
  const double tokens = double(o.global_batch * o.seq);
  plan.tokens_per_s = tokens / plan.step_s;
  const double model_flops =
      (6.0 * double(plan.parameters) + 12.0 * c.layers * double(o.seq) * c.dim) * tokens;
  plan.flops_per_device = model_flops / (plan.step_s * l.devices());
  plan.mfu = plan.flops_per_device / o.spec.peak_flops(math_precision(o.dtype));
  plan.fits = o.spec.memory_bytes == 0 || plan.worst.peak_bytes <= o.spec.memory_bytes;
  return plan;
}

std::vector<Plan> rank_layouts(const PlanOptions& options, int devices) {
  DLF_CHECK(options.global_batch > 0, "rank_layouts: the global batch must be set");
  const GPTConfig& c = options.model;
  std::vector<Plan> plans;
  for (int tp = 1; tp <= devices; ++tp) {
    for (int pp = 1; tp * pp <= devices; ++pp) {
      const Layout l{.dp = devices / (tp * pp), .tp = tp, .pp = pp};
      const int64_t micro = train::default_micro_batch(l, options.global_batch);
      if (l.devices() != devices || c.heads % tp != 0 ||
          pp * options.virtual_stages > c.layers + 1 || options.global_batch % (l.dp * micro) != 0)
        continue;
      if (options.schedule == PipelineSchedule::interleaved &&
          (pp < 2 || options.global_batch / (l.dp * micro) % pp != 0))
        continue;
      PlanOptions o = options;
      o.layout = l;
      o.micro_batch = micro;
      plans.push_back(plan_gpt(o));
    }
  }
  DLF_CHECK(!plans.empty(), "no dp x tp x pp layout of ", devices, " devices divides ", c.name,
            " (", c.heads, " heads, ", c.layers, " layers) and a batch of ", options.global_batch);
  std::stable_sort(plans.begin(), plans.end(), [](const Plan& a, const Plan& b) {
    if (a.fits != b.fits) return a.fits;
    return a.fits ? a.step_s < b.step_s : a.worst.peak_bytes < b.worst.peak_bytes;
  });
  return plans;
}

std::string describe(const Plan& p) {
  const PlanOptions& o = p.options;
  const StagePlan& w = p.worst;
  std::ostringstream os;
  char line[512];
  std::snprintf(line, sizeof line,
                "%s (%s parameters) on %d x %s: dp %d x tp %d x pp %d, %s, %s%s\n",
                o.model.name.c_str(), format_count(double(p.parameters)).c_str(),
                o.layout.devices(), o.spec.name.c_str(), o.layout.dp, o.layout.tp, o.layout.pp,
                dtype_name(o.dtype), parallel::schedule_label(o.schedule, o.virtual_stages).c_str(),
                plan_flags(o.recompute, o.zero, o.offload).c_str());
  os << line;
  std::snprintf(line, sizeof line,
                "  batch %ld sequences x %ld tokens; micro-batch %ld, %ld per pipeline\n",
                long(o.global_batch), long(o.seq), long(o.micro_batch), long(p.micro_batches));
  os << line;
  std::snprintf(line, sizeof line,
                "  per device (stage %d, %d layers, %s parameters): peak %s of %s — %s\n", w.stage,
                w.layers, format_count(double(w.parameters)).c_str(),
                format_bytes(w.peak_bytes).c_str(),
                o.spec.memory_bytes > 0 ? format_bytes(o.spec.memory_bytes).c_str() : "unlimited",
                p.fits ? "fits" : "DOES NOT FIT");
  os << line;
  os << "    at its peak (" << (w.peak_at_update ? "the optimizer step" : "forward + backward")
     << "): " << format_by_category(w.memory) << "\n";
  os << "    activations of one micro-batch " << format_bytes(w.activation_bytes) << ", "
     << w.in_flight;
  if (o.virtual_stages > 1) os << " chunks of 1/" << o.virtual_stages << " of them";
  os << " held at once\n";
  const StagePlan& b = p.stages.at(size_t(p.slowest));
  std::snprintf(line, sizeof line,
                "  per micro-batch%s: forward %.1f ms, backward %.1f ms, tp allreduce %.1f ms, "
                "pipeline send %.2f ms\n",
                o.layout.pp > 1 ? (" on stage " + std::to_string(b.stage) + " (" +
                                   std::to_string(b.layers) + " layers, the slowest)")
                                      .c_str()
                                : "",
                b.forward_s * 1e3, b.backward_s * 1e3, b.tp_comm_s * 1e3, p.p2p_s * 1e3);
  os << line;
  std::snprintf(line, sizeof line,
                "  step: %.3f s = %.2f x %.1f ms (bubble %.0f %%) + dp allreduce %.1f ms exposed "
                "(of %.1f) + optimizer %.1f ms\n",
                p.step_s, double(p.micro_batches) + p.fill_s / p.stage_s, p.stage_s * 1e3,
                100 * p.bubble_fraction, p.dp_exposed_s * 1e3, p.dp_allreduce_s * 1e3,
                p.optimizer_s * 1e3);
  os << line;
  std::snprintf(line, sizeof line,
                "  %s %.0f tokens/s, %.1f TFLOP/s a device (6N + 12LTC a token), MFU %.1f %%%s\n",
                p.fits ? "predicted" : "it would run at", p.tokens_per_s, p.flops_per_device / 1e12,
                100 * p.mfu, p.fits ? "" : " — if it fit: it does not");
  os << line << describe_breakdown(p) << "  " << limit_line(p) << "\n";
  return os.str();
}

std::string to_json_line(const Plan& p) {
  const PlanOptions& o = p.options;
  JsonLine line;
  line.add("bench", "plan")
      .add("case", o.model.name + " dp" + std::to_string(o.layout.dp) + " tp" +
                       std::to_string(o.layout.tp) + " pp" + std::to_string(o.layout.pp))
      .add("impl", "sim")
      .add("threads", 1)
      .add("metric", "step_time")
      .add("value", p.step_s)
      .add("unit", "s")
      .add("device", o.spec.name)
      .add("devices", o.layout.devices())
      .add("tokens_per_s", p.tokens_per_s)
      .add("mfu", p.mfu)
      .add("tflops_per_device", p.flops_per_device / 1e12)
      .add("peak_bytes", double(p.worst.peak_bytes))
      .add("fits", p.fits)
      .add("parameters", double(p.parameters))
      .add("batch", o.global_batch)
      .add("micro_batch", o.micro_batch)
      .add("micro_batches", p.micro_batches)
      .add("schedule", parallel::schedule_name(o.schedule))
      .add("virtual_stages", o.virtual_stages)
      .add("stage_ms", p.stage_s * 1e3)
      .add("bubble_fraction", p.bubble_fraction)
      .add("fill_ms", p.fill_s * 1e3)
      .add("p2p_ms", p.p2p_s * 1e3)
      .add("dp_comm_ms", p.dp_allreduce_s * 1e3)
      .add("dp_exposed_ms", p.dp_exposed_s * 1e3)
      .add("optimizer_ms", p.optimizer_s * 1e3)
      .add("most_memory_stage", p.worst.stage)
      .add("slowest_stage", p.slowest);
  for (const StagePlan& st : p.stages) {
    const std::string stage = "stage" + std::to_string(st.stage) + "_";
    line.add(stage + "peak_bytes", double(st.peak_bytes))
        .add(stage + "forward_ms", st.forward_s * 1e3)
        .add(stage + "backward_ms", st.backward_s * 1e3)
        .add(stage + "tp_comm_ms", st.tp_comm_s * 1e3);
  }
  add_memory_fields(line, p.worst.memory);
  add_breakdown_fields(line, p);
  return line.str();
}

}  // namespace dlf::plan
