#include <dlf/core/autocast.h>
#include <dlf/core/factory.h>
#include <dlf/core/op_profile.h>
#include <dlf/device/device_memory.h>
#include <dlf/json_line.h>
#include <dlf/models/family.h>
#include <dlf/models/registry.h>
#include <dlf/nn/optim/optimizer.h>
#include <dlf/parallel/planning_communicator.h>
#include <dlf/plan/plan.h>
#include <dlf/train/rank_step.h>

#include <algorithm>
#include <cstdio>
#include <functional>
#include <memory>
#include <sstream>

#include "common.h"

namespace dlf::plan {
namespace {

// One replica of a family: its module and its training loss on a batch of the plan device.
struct Replica {
  std::shared_ptr<nn::Module> module;
  std::function<Tensor()> loss;
  std::string unit;
  double items = 0;  // per replica per step
};

Replica build_replica(const ReplicaPlanOptions& o, int64_t batch) {
  const models::Family& family = models::family_of(o.model);
  const int64_t seq = family.sequence(o.model, o.seq);
  Generator gen(0);  // values do not matter on the plan device: only shapes
  models::ExampleBatch b = family.example_batch(o.model, batch, seq, gen);
  DefaultDeviceGuard on_plan_device(kPlanDevice);
  std::shared_ptr<nn::Module> m;
  {
    MemoryScope parameters(MemoryCategory::parameters);
    m = family.build(o.model, {});
  }
  {
    MemoryScope activations(MemoryCategory::activations);
    for (Tensor& t : b.batch) t = t.to(kPlanDevice);
  }
  const bool text = family.unit == "tok";
  return {m, [m, loss = family.loss, x = b.batch] { return loss(*m, x); },
          text ? "tokens" : "images", double(text ? batch * b.seq : batch)};
}

// A data-parallel rank's step as a run makes it — train::RankStep with DDP's allreduce
// overlapping backward, ZeroOptimizer's shards, FSDP's gathered and prefetched blocks, the
// offloaded optimizer's and shards' copies over the host link — over a planning dp group on the
// plan device, run twice as the trainer runs it (zero_grad, forward and backward with the
// reduction, the update). The second step's peak, with the optimizer state the first made
// resident, and its times on the simulated clock.
struct RankRun {
  int64_t peak = 0;
  BytesByCategory at_peak{};
  double forward_backward_s = 0, update_s = 0;  // the reduction's wait in the first
  parallel::CommSeconds dp;                     // the step's data-parallel collectives
};
RankRun run_rank_step(const ReplicaPlanOptions& o, int64_t rows) {
  reset_plan_device(o.spec);
  const models::Family& family = models::family_of(o.model);
  Generator gen(0);  // values do not matter on the plan device: only shapes
  const models::ExampleBatch b = [&] {
    DefaultDeviceGuard host(kCPU);
    return family.example_batch(o.model, rows, family.sequence(o.model, o.seq), gen);
  }();
  DefaultDeviceGuard on_plan_device(kPlanDevice);
  const std::unique_ptr<parallel::Mesh> mesh = planning_mesh({.dp = o.dp});
  const train::PartOptions part{
      .zero = o.zero, .offload_params = o.offload == Offload::params, .recompute = o.recompute};
  std::unique_ptr<train::RankModel> model;
  {
    MemoryScope parameters(MemoryCategory::parameters);
    model = train::make_rank_model(family, o.model, *mesh, family.build(o.model, {})->state_dict(),
                                   part);
  }
  train::RankStep step(
      std::move(model), *mesh,
      {.part = part, .offload_optimizer = o.offload != Offload::none, .precision = o.dtype});
  Allocator& memory = allocator_for(kPlanDevice);
  sim::Timeline& clock = sim::timeline(kPlanDevice);
  RankRun run;
  for (int i = 0; i < 2; ++i) {
    if (i == 1) memory.reset_peak();
    const double start = clock.now();
    const parallel::CommSeconds dp = mesh->dp().seconds();
    step.zero_grad();
    {
      AutocastGuard autocast(autocast_for(o.dtype, kPlanDevice));
      (void)step.model().run_step(b.batch);
    }
    (void)step.clip_gradients();
    const double reduced = clock.now();
    step.update();
    run.forward_backward_s = reduced - start;
    run.update_s = clock.now() - reduced;
    const parallel::CommSeconds dp_now = mesh->dp().seconds();
    run.dp = {dp_now.busy - dp.busy, dp_now.exposed - dp.exposed, dp_now.queued - dp.queued};
  }
  const MemoryStats stats = memory.stats();
  run.peak = stats.peak_bytes;
  run.at_peak = stats.at_peak_by;
  return run;
}

int64_t category(const BytesByCategory& bytes, MemoryCategory c) {
  return bytes[static_cast<int>(c)];
}

}  // namespace

std::string format_count(double count) {
  char text[32];
  if (count >= 1e9) {
    std::snprintf(text, sizeof text, "%.1fB", count / 1e9);
  } else if (count >= 1e6) {
    std::snprintf(text, sizeof text, "%.1fM", count / 1e6);
  } else if (count >= 1e3) {
    std::snprintf(text, sizeof text, "%.1fK", count / 1e3);
  } else {
    std::snprintf(text, sizeof text, "%.0f", count);
  }
  return text;
}

ReplicaPlan plan_replica(const ReplicaPlanOptions& options) {
  ReplicaPlan plan;
  plan.options = options;
  ReplicaPlanOptions& o = plan.options;
  DLF_CHECK(o.dp > 0, "plan: dp must be positive");
  if (o.global_batch == 0) o.global_batch = o.dp;
  DLF_CHECK(o.global_batch % o.dp == 0, "plan: the global batch ", o.global_batch,
            " does not split over dp ", o.dp);
  const int64_t batch = o.global_batch / o.dp;
  const RankRun run = run_rank_step(o, batch);

  // The forward alone, for its time, FLOPs and activations.
  reset_plan_device(o.spec);
  Allocator& memory = allocator_for(kPlanDevice);
  sim::Timeline& clock = sim::timeline(kPlanDevice);
  Replica replica = build_replica(o, batch);
  replica.module->recompute(o.recompute);
  for (const Tensor& p : replica.module->parameters()) plan.parameters += p.numel();
  double forward_flops = 0;
  const double start = clock.now();
  {
    MemoryScope scope(MemoryCategory::activations);
    AutocastGuard autocast(autocast_for(o.dtype, kPlanDevice));
    OpProfile forward;
    const Tensor loss = replica.loss();
    forward_flops = forward.outermost().flops;
    plan.activation_bytes = category(memory.stats().live_by, MemoryCategory::activations);
  }
  plan.forward_s = clock.now() - start;
  // The model's FLOPs, as MFU counts them: backward twice the forward (PaLM's 6N = 2N + 4N),
  // whatever a recompute adds.
  const double flops = 3 * forward_flops;

  plan.peak_bytes = run.peak;
  plan.memory = run.at_peak;
  plan.dp_allreduce_s = run.dp.busy;
  plan.dp_exposed_s = run.dp.exposed;
  plan.backward_s = std::max(0.0, run.forward_backward_s - run.dp.exposed - plan.forward_s);
  plan.optimizer_s = run.update_s;
  plan.step_s = run.forward_backward_s + run.update_s;
  plan.unit = replica.unit;
  plan.items_per_step = replica.items * o.dp;
  plan.items_per_s = plan.items_per_step / plan.step_s;
  plan.mfu = flops / (plan.step_s * o.spec.peak_flops(math_precision(o.dtype)));
  plan.fits = o.spec.memory_bytes == 0 || plan.peak_bytes <= o.spec.memory_bytes;
  return plan;
}

std::string describe(const ReplicaPlan& p) {
  const ReplicaPlanOptions& o = p.options;
  std::ostringstream os;
  char line[512];
  std::snprintf(line, sizeof line, "%s (%s parameters) on %d x %s: dp %d, %s%s\n", o.model.c_str(),
                format_count(double(p.parameters)).c_str(), o.dp, o.spec.name.c_str(), o.dp,
                dtype_name(o.dtype), plan_flags(o.recompute, o.zero, o.offload).c_str());
  os << line;
  std::snprintf(line, sizeof line, "  batch %ld (%.0f %s), %ld per device\n", long(o.global_batch),
                p.items_per_step, p.unit.c_str(), long(o.global_batch / o.dp));
  os << line;
  std::snprintf(
      line, sizeof line, "  per device: peak %s of %s — %s\n",
      format_bytes(double(p.peak_bytes)).c_str(),
      o.spec.memory_bytes > 0 ? format_bytes(double(o.spec.memory_bytes)).c_str() : "unlimited",
      p.fits ? "fits" : "DOES NOT FIT");
  os << line;
  os << "    at its peak: " << format_by_category(p.memory) << "\n";
  os << "    activations at the end of forward " << format_bytes(double(p.activation_bytes))
     << "\n";
  std::snprintf(line, sizeof line,
                "  step: %.4f s = forward %.2f ms + backward %.2f ms + dp allreduce %.2f ms "
                "exposed (of %.2f) + optimizer %.2f ms\n",
                p.step_s, p.forward_s * 1e3, p.backward_s * 1e3, p.dp_exposed_s * 1e3,
                p.dp_allreduce_s * 1e3, p.optimizer_s * 1e3);
  os << line;
  std::snprintf(line, sizeof line, "  %s %.0f %s/s, MFU %.1f %%%s\n",
                p.fits ? "predicted" : "it would run at", p.items_per_s, p.unit.c_str(),
                100 * p.mfu, p.fits ? "" : " — if it fit: it does not");
  os << line;
  return os.str();
}

std::string to_json_line(const ReplicaPlan& p) {
  const ReplicaPlanOptions& o = p.options;
  JsonLine line;
  line.add("bench", "plan")
      .add("case", o.model + " dp" + std::to_string(o.dp))
      .add("impl", "sim")
      .add("threads", 1)
      .add("metric", "step_time")
      .add("value", p.step_s)
      .add("unit", "s")
      .add("device", o.spec.name)
      .add("devices", o.dp)
      .add("batch", o.global_batch)
      .add(p.unit + "_per_s", p.items_per_s)
      .add("mfu", p.mfu)
      .add("peak_bytes", double(p.peak_bytes))
      .add("fits", p.fits);
  add_memory_fields(line, p.memory);
  return line.str();
}

}  // namespace dlf::plan
