#include <dlf/core/autocast.h>
#include <dlf/core/op.h>
#include <dlf/device/device_memory.h>
#include <dlf/device/sim_device.h>
#include <dlf/json_line.h>
#include <dlf/models/gpt_parallel.h>
#include <dlf/models/registry.h>
#include <dlf/nn/optim/optimizer.h>
#include <dlf/parallel/planning_communicator.h>
#include <dlf/plan/plan.h>

#include <algorithm>
#include <cstdio>
#include <map>
#include <memory>
#include <numeric>
#include <sstream>
#include <tuple>

#include "common.h"

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

struct StageRun {
  int64_t parameters = 0, parameter_tensors = 0, activation_bytes = 0, optimizer_bytes = 0,
          grad_bytes = 0;
  double forward_s = 0, backward_s = 0, optimizer_s = 0;
  int64_t peak_step = 0, peak_update = 0;  // during forward + backward; the AdamW step
  BytesByCategory at_peak_step{}, at_peak_update{};
  BytesByCategory at_forward_end{};  // live at the end of forward (the most activations)
  ZeroShape zero;                    // what ZeRO-3 gathers and keeps whole
  std::vector<parallel::PlannedCollective> tp_comm;  // the model's tp collectives, each way
};

// The model's own stage (ParallelGPT, tp rank 0 of a planning group): forward and backward of
// one micro-batch through every chunk of the stage, then the AdamW step, on the plan device.
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
  const std::vector<Tensor> params = model->parameters();
  StageRun run;
  for (const Tensor& p : params) run.parameters += p.numel();
  run.parameter_tensors = int64_t(params.size());
  run.zero = zero_shape(*model);
  Allocator& memory = allocator_for(d);
  sim::Timeline& clock = sim::timeline(d);

  memory.reset_peak();
  double t = clock.now();
  Tensor out, input;
  {
    MemoryScope scope(MemoryCategory::activations);
    AutocastGuard autocast(autocast_for(s.dtype));
    const Tensor idx = Tensor::empty({s.batch, s.seq}, DType::i64, d);
    if (!model->first) {  // the activations received from the previous stage
      input = Tensor::empty({s.batch, s.seq, s.c.dim}, model->residual_dtype(), d);
      input.requires_grad_();
      out = input;
    }
    for (int chunk = 0; chunk < s.chunks; ++chunk) out = model->forward(out, idx, idx, chunk);
  }
  run.forward_s = clock.now() - t;
  run.at_forward_end = memory.stats().live_by;
  run.activation_bytes = run.at_forward_end[static_cast<int>(MemoryCategory::activations)];
  t = clock.now();
  if (model->last) {
    out.backward();
  } else {  // the gradient arriving from the next stage
    out.backward(Tensor::empty(out.shape(), out.dtype(), d));
  }
  run.backward_s = clock.now() - t;
  out = Tensor();
  input = Tensor();
  run.tp_comm = tp.collectives();
  MemoryStats stats = memory.stats();
  run.peak_step = stats.peak_bytes;
  run.at_peak_step = stats.at_peak_by;
  run.grad_bytes = stats.live_by[static_cast<int>(MemoryCategory::gradients)];

  memory.reset_peak();
  t = clock.now();
  nn::optim::AdamW opt({{.params = params, .weight_decay = 0.1}},
                       {.lr = 1e-4, .beta1 = 0.9, .beta2 = 0.95, .eps = 1e-8});
  opt.step();
  run.optimizer_s = clock.now() - t;
  stats = memory.stats();
  run.peak_update = stats.peak_bytes;
  run.at_peak_update = stats.at_peak_by;
  run.optimizer_bytes = stats.live_by[static_cast<int>(MemoryCategory::optimizer_state)];
  return run;
}

std::vector<int> strided(int count, int stride) {
  std::vector<int> group;
  for (int i = 0; i < count; ++i) group.push_back(i * stride);
  return group;
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
};

StageCache::StageCache() : runs_(std::make_unique<Runs>()) {}
StageCache::~StageCache() = default;
int64_t StageCache::runs_made() const { return int64_t(runs_->made.size()); }

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
  plan.parameters = models::gpt_parameter_count(c);
  const int64_t m = plan.micro_batches;

  // [b, T, C] between stages, in the residual stream's dtype (bf16 under autocast)
  const double boundary = double(o.micro_batch * o.seq * c.dim) * double(dtype_size(o.dtype));
  const std::vector<int> tp_group = strided(l.tp, 1);
  const std::vector<int> dp_group = strided(l.dp, l.tp * l.pp);
  const std::vector<int> pp_pair = {0, l.tp};
  auto collective = [&](sim::Collective kind, double bytes, const std::vector<int>& group) {
    return sim::collective_seconds(o.spec, kind, bytes, group);
  };
  if (l.pp > 1) {  // each tp rank sends its slice over its own link; the receivers allgather
    plan.p2p_s = collective(sim::Collective::send_recv, boundary / l.tp, pp_pair) +
                 (l.tp > 1 ? collective(sim::Collective::allgather, boundary, tp_group) : 0);
  }

  // Every stage, each kind (first or not, last or not, its chunks' blocks) run once: in this
  // plan, or in the cache's earlier plans of the same model, tp, micro-batch and flags.
  StageCache local;
  auto& runs = (cache ? *cache : local).runs_->made;
  const std::string shape = c.name + " " + o.spec.name + " " + std::to_string(c.layers) + "x" +
                            std::to_string(c.dim) + " tp" + std::to_string(l.tp) + " b" +
                            std::to_string(o.micro_batch) + " s" + std::to_string(o.seq) + " " +
                            dtype_name(o.dtype) + " " + autograd::recompute_name(o.recompute);
  for (int stage = 0; stage < l.pp; ++stage) {
    const bool first = stage == 0, last = stage == l.pp - 1;
    std::vector<int> chunk_layers;  // the blocks of each of this stage's chunks
    for (int v = 0; v < chunks; ++v) {
      const auto [begin, end] = stage_blocks[size_t(v * l.pp + stage)];
      chunk_layers.push_back(int(end - begin));
    }
    const int layers = std::accumulate(chunk_layers.begin(), chunk_layers.end(), 0);
    const auto key = std::make_tuple(shape, first, last, chunk_layers);
    if (!runs.contains(key)) {
      runs.emplace(
          key, run_stage({c, l.tp, stage, l.pp, chunks, o.micro_batch, o.seq, o.dtype, o.recompute},
                         o.spec));
    }
    const StageRun& run = runs.at(key);
    double tp_comm = 0;  // the model's own, forward, backward and recomputed, over its tp group
    for (const parallel::PlannedCollective& k : run.tp_comm)
      tp_comm += collective(k.kind, k.bytes, tp_group);
    // Chunks of micro-batches held at once: the warm-up's forwards and one more (run_pipeline),
    // each a share of a micro-batch's activations by its blocks; beyond the one micro-batch the
    // stage's run held.
    const int in_flight = int(std::min<int64_t>(
        parallel::warmup_forwards(o.schedule, l.pp, stage, chunks, m) + 1, m * chunks));
    double held = 0;
    for (int k = 0; k < in_flight; ++k) {
      const int v = parallel::pipeline_pass(o.schedule, k, l.pp, chunks, true).chunk;
      held += layers > 0 ? double(chunk_layers[size_t(v)]) / layers : 1.0 / chunks;
    }
    const int64_t more_activations = int64_t(double(run.activation_bytes) * (held - 1));
    StagePlan s{.stage = stage,
                .layers = layers,
                .parameters = run.parameters,
                .activation_bytes = run.activation_bytes,
                .in_flight = in_flight,
                .forward_s = run.forward_s,
                .backward_s = run.backward_s,
                .tp_comm_s = tp_comm,
                .optimizer_s = o.zero > 0 ? run.optimizer_s / l.dp : run.optimizer_s};
    // Peak: forward + backward with the optimizer state and the gradients accumulated over the
    // micro-batches resident and `in_flight` micro-batches' activations held, or the AdamW
    // step — whichever is higher. With one micro-batch a step nothing has accumulated: the
    // step starts without gradients (zero_grad sets them to none), as the stage's run did.
    const int64_t grads_at_peak = run.at_peak_step[static_cast<int>(MemoryCategory::gradients)];
    const int64_t accumulated = m > 1 ? run.grad_bytes - grads_at_peak : 0;
    const int64_t step_peak = run.peak_step + run.optimizer_bytes + accumulated + more_activations;
    if (step_peak >= run.peak_update) {
      s.peak_bytes = step_peak;
      s.memory = run.at_peak_step;
      s.memory[static_cast<int>(MemoryCategory::gradients)] = grads_at_peak + accumulated;
      s.memory[static_cast<int>(MemoryCategory::optimizer_state)] += run.optimizer_bytes;
      s.memory[static_cast<int>(MemoryCategory::activations)] += more_activations;
    } else {
      s.peak_bytes = run.peak_update;
      s.memory = run.at_peak_update;
      s.peak_at_update = true;
    }
    // what ZeRO and offload leave, at the peak or at the end of forward
    BytesByCategory end = run.at_forward_end;
    end[static_cast<int>(MemoryCategory::gradients)] = m > 1 ? run.grad_bytes : 0;
    end[static_cast<int>(MemoryCategory::optimizer_state)] += run.optimizer_bytes;
    end[static_cast<int>(MemoryCategory::activations)] += more_activations;
    s.optimizer_s +=
        shrink_for_zero(s.memory, s.peak_bytes, s.peak_at_update, end, run.zero, l.dp,
                        {.offload = o.offload,
                         .zero = o.zero,
                         .update_bytes = double(run.grad_bytes) / (o.zero > 0 ? l.dp : 1),
                         .tensors = run.parameter_tensors,
                         .micro_batches = m,
                         .update_s = s.optimizer_s,
                         .forward_s = s.forward_s,
                         .backward_s = s.backward_s},
                        o.spec);
    // Each chunk receives and sends forward, and back.
    const double stage_s = s.forward_s + s.backward_s + s.tp_comm_s + 2 * chunks * plan.p2p_s;
    if (stage == 0 || stage_s > plan.stage_s) {
      plan.stage_s = stage_s;
      plan.slowest = stage;
    }
    plan.optimizer_s = std::max(plan.optimizer_s, s.optimizer_s);
    const ZeroComm dp =
        zero_comm(o.spec, o.zero, double(run.grad_bytes), dp_group, s.forward_s, s.backward_s);
    if (dp.seconds > plan.dp_allreduce_s) {
      plan.dp_allreduce_s = dp.seconds;
      plan.dp_exposed_s = dp.exposed;
    }
    if (stage == 0 || s.peak_bytes > plan.worst.peak_bytes) plan.worst = s;
    plan.stages.push_back(std::move(s));
  }
  // The pipeline fills and drains in (pp - 1) chunk-times: pp - 1 stage-times over V chunks.
  const double fill = double(l.pp - 1) / chunks;
  plan.bubble_fraction = fill / (double(m) + fill);
  plan.step_s = (double(m) + fill) * plan.stage_s + plan.dp_exposed_s + plan.optimizer_s;
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
                p.step_s, double(p.micro_batches) + double(o.layout.pp - 1) / o.virtual_stages,
                p.stage_s * 1e3, 100 * p.bubble_fraction, p.dp_exposed_s * 1e3,
                p.dp_allreduce_s * 1e3, p.optimizer_s * 1e3);
  os << line;
  std::snprintf(line, sizeof line,
                "  %s %.0f tokens/s, %.1f TFLOP/s a device (6N + 12LTC a token), MFU %.1f %%%s\n",
                p.fits ? "predicted" : "it would run at", p.tokens_per_s, p.flops_per_device / 1e12,
                100 * p.mfu, p.fits ? "" : " — if it fit: it does not");
  os << line;
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
  return line.str();
}

}  // namespace dlf::plan
