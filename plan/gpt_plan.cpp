#include <dlf/core/autocast.h>
#include <dlf/models/gpt.h>
#include <dlf/models/gpt_parallel.h>
#include <dlf/plan/plan.h>
#include <dlf/train/rank_step.h>

#include <algorithm>
#include <map>
#include <numeric>
#include <tuple>

#include "common.h"
#include "stage_runs.h"

namespace dlf::plan {

using namespace internal;

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

}  // namespace dlf::plan
