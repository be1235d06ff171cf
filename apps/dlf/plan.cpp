#include "plan.h"

#include <cstdio>
#include <optional>

#include <dlf/json_line.h>
#include <dlf/models/registry.h>
#include <dlf/plan/compiled.h>
#include <dlf/plan/memory_flags.h>
#include <dlf/plan/plan.h>
#include <dlf/plan/search.h>

#include "devices.h"

namespace dlf::app {
namespace {

// A GPT's micro-batch over `layout` as dlf train takes it: --micro-batch, else one sequence
// through a pipeline and a replica's rows without one (train::default_micro_batch).
int64_t gpt_micro_batch(const PlanCommand& c, const parallel::Layout& layout) {
  return c.micro_batch > 0 ? c.micro_batch : train::default_micro_batch(layout, c.batch);
}

// Micro-batches are a GPT's, as dlf train runs them: a model of another family takes its
// replica's rows at once.
void check_micro_batch(const PlanCommand& c, const std::string& model, bool gpt) {
  DLF_CHECK(gpt || c.micro_batch == 0, "--micro-batch ", c.micro_batch, ": ", model,
            " takes its replica's rows at once (micro-batches are the GPT models')");
}

// Any family, data-parallel: planned from the model itself on a meta device.
void plan_data_parallel(const PlanCommand& c, const DeviceArg& device, DType dtype) {
  DLF_CHECK(c.tp == 1 && c.pp == 1, "dlf plan: ", c.model,
            " plans data-parallel layouts (--tp and --pp plans are GPT's)");
  check_micro_batch(c, c.model, false);
  const plan::ReplicaPlan plan =
      plan::plan_replica({.model = c.model,
                          .dp = c.devices,
                          .spec = device.spec,
                          .global_batch = c.batch,
                          .seq = c.seq,
                          .dtype = dtype,
                          .recompute = autograd::parse_recompute(c.recompute),
                          .zero = c.zero,
                          .offload = plan::offload_flag(c.offload, c.zero)});
  std::printf("%s", (c.json ? plan::to_json_line(plan) + "\n" : plan::describe(plan)).c_str());
  if (!c.json && !plan.fits)
    std::printf("  %s\n", plan::fitting_flags_hint({.model = c.model,
                                                    .layout = {.dp = c.devices},
                                                    .spec = device.spec,
                                                    .batch = plan.options.global_batch,
                                                    .seq = plan.options.seq,
                                                    .dtype = dtype},
                                                   {autograd::parse_recompute(c.recompute), c.zero,
                                                    plan::offload_flag(c.offload, c.zero)})
                              .c_str());
}

// A GPT given by --layers, --hidden and --heads, or none.
std::optional<models::GPTConfig> gpt_by_dimensions(const PlanCommand& c) {
  if (c.layers == 0 && c.hidden == 0 && c.heads == 0) return std::nullopt;
  DLF_CHECK(c.layers > 0 && c.hidden > 0 && c.heads > 0,
            "a GPT by its dimensions needs --layers, --hidden and --heads (got ", c.layers, ", ",
            c.hidden, " and ", c.heads, ")");
  DLF_CHECK(c.hidden % c.heads == 0, "--hidden ", c.hidden, " does not split into ", c.heads,
            " heads");
  return models::GPTConfig{.name = "gpt (" + std::to_string(c.layers) + " layers, hidden " +
                                   std::to_string(c.hidden) + ", " + std::to_string(c.heads) +
                                   " heads)",
                           .vocab = c.vocab > 0 ? c.vocab : 50257,
                           .context = c.seq > 0 ? c.seq : 2048,
                           .layers = c.layers,
                           .heads = c.heads,
                           .dim = c.hidden};
}

// --compile: the step captured on a meta device as `dlf train --compile` runs it on one device
// or as one rank of data-parallel replicas (DDP, ZeRO-1, -2 or -3) — of a GPT, one rank of its
// dp x tp x pp mesh, every pipeline stage's planned and the largest reported, its rows in
// micro-batches as dlf train takes them — its memory planned as graph mode does. The model is a
// zoo one or a GPT by its dimensions.
void plan_compiled(const PlanCommand& c, const DeviceArg& device, const parallel::Layout& layout) {
  const int64_t dp = layout.dp;
  DLF_CHECK(c.recompute == "none" && c.offload == "none",
            "dlf plan --compile: graph mode rematerialises on its own and captures ZeRO without "
            "offload; leave out --recompute and --offload");
  const std::optional<models::GPTConfig> custom = gpt_by_dimensions(c);
  const plan::StepModel model = custom ? plan::StepModel(*custom) : plan::StepModel(c.model);
  // --seq's default as the other plans': a GPT's context, BERT's benchmark length
  const int64_t seq = model.gpt ? (c.seq > 0 ? c.seq : model.gpt->context)
                                : models::family_of(c.model).sequence(c.model, c.seq);
  const int zero = dp > 1 ? c.zero : 0;  // ZeRO over one rank is the plain optimizer
  const bool pipeline = c.pp > 1;
  check_micro_batch(c, model.name, model.gpt.has_value());
  // A replica's rows; a GPT takes them in micro-batches as dlf train does
  const int64_t micro = gpt_micro_batch(c, layout);
  const int64_t rows = c.batch / dp;
  DLF_CHECK(rows % micro == 0, "dlf plan --compile: a replica's ", rows,
            " sequences do not split into micro-batches of ", micro, " (--micro-batch)");
  const plan::Replicas replicas{.dp = layout.dp,
                                .zero = zero,
                                .tp = c.tp,
                                .pp = c.pp,
                                .micro_batch = model.gpt ? micro : 0,
                                .schedule = parallel::parse_schedule(c.schedule),
                                .virtual_stages = c.virtual_stages};
  const int64_t planned_micro = model.gpt ? micro : rows;
  const plan::CompiledPlan plan =
      plan::plan_compiled_stages(device.spec, model, rows, seq, c.precision, replicas);
  const plan::CompiledStepMemory& m = plan.largest;
  const int64_t capacity = device.spec.memory_bytes;
  const bool fits = plan.fits(device.spec);
  if (c.json) {
    JsonLine line;
    line.add("model", model.name)
        .add("device", device.spec.name)
        .add("compiled", true)
        .add("dp", dp)
        .add("tp", c.tp)
        .add("pp", c.pp)
        .add("stage", plan.stage);
    for (size_t s = 0; pipeline && s < plan.stage_peaks.size(); ++s)  // each stage's peak
      line.add("peak_bytes_stage" + std::to_string(s), plan.stage_peaks[s]);
    line.add("zero", zero)
        .add("batch", m.batch)
        .add("micro_batch", planned_micro)
        .add("seq", m.seq)
        .add("nodes", int64_t(m.nodes))
        .add("peak_bytes", m.planned_peak())
        .add("parameters_bytes", m.parameters)
        .add("optimizer_state_bytes", m.optimizer_state)
        .add("batch_bytes", m.batch_bytes)
        .add("arena_bytes", m.arena)
        .add("capacity_bytes", capacity)
        .add("fits", fits);
    std::printf("%s\n", line.str().c_str());
    return;
  }
  std::printf(
      "%s on %lld x %s, compiled: one training step (forward, backward, %s%sclipping, %sAdamW) "
      "captured on a meta device, %zu nodes after the passes, %s\n",
      model.name.c_str(), (long long)(dp * c.tp * c.pp), device.spec.name.c_str(),
      c.tp > 1 ? ("sharded over " + std::to_string(c.tp) + " tensor-parallel ranks, ").c_str() : "",
      dp == 1     ? ""
      : zero == 3 ? "each block's parameters gathered, gradients reduce-scattered, "
      : zero == 2 ? "gradients reduce-scattered, "
                  : "gradients allreduced, ",
      zero > 0 ? ("ZeRO-" + std::to_string(zero) + " ").c_str() : "", m.nodes, c.precision.c_str());
  std::printf("  batch %lld x %lld per replica\n", (long long)m.batch, (long long)m.seq);
  if (pipeline)
    std::printf("  %d pipeline stages, %s, micro-batches of %lld: stage %d's peak is the largest\n",
                c.pp, parallel::schedule_label(replicas.schedule, c.virtual_stages).c_str(),
                (long long)micro, plan.stage);
  else if (planned_micro < rows)
    std::printf("  micro-batches of %lld, their gradients accumulated\n", (long long)planned_micro);
  std::printf("  per device: peak %s%s%s — %s\n", format_bytes(double(m.planned_peak())).c_str(),
              capacity > 0 ? " of " : "",
              capacity > 0 ? format_bytes(double(capacity)).c_str() : "",
              fits ? "fits" : "does not fit");
  std::printf(
      "    parameters %s, optimizer state %s, batch %s, arena %s (activations, "
      "temporaries and gradients: the memory plan's one block)\n",
      format_bytes(double(m.parameters)).c_str(), format_bytes(double(m.optimizer_state)).c_str(),
      format_bytes(double(m.batch_bytes)).c_str(), format_bytes(double(m.arena)).c_str());
}

}  // namespace

void run_plan(PlanCommand c) {
  const bool batch_given = c.batch > 0;
  if (!batch_given)
    c.batch = gpt_by_dimensions(c) ? models::family("gpt").default_batch("")
                                   : models::family_of(c.model).default_batch(c.model);
  const int64_t tp_pp = int64_t(c.tp) * c.pp;  // each at most 2^20: no overflow in 64 bits
  DLF_CHECK(c.devices % tp_pp == 0, "--devices ", c.devices,
            " is not a multiple of tp x pp = ", tp_pp);
  const int64_t dp = c.dp > 0 ? c.dp : c.devices / tp_pp;
  DLF_CHECK(dp * tp_pp == c.devices, "dp ", dp, " x tp ", c.tp, " x pp ", c.pp, " = ", dp * tp_pp,
            " devices, but --devices is ", c.devices);
  DLF_CHECK(c.batch % dp == 0, "--batch ", c.batch, " does not split over dp ", dp,
            ": each replica takes an equal share, so the batch must be a multiple",
            batch_given ? "" : " (the default batch, dlf train's: give one with --batch)");
  const DeviceArg device = parse_device_arg(c.device);
  DLF_CHECK(device.type != DeviceType::cpu, "--device '", c.device,
            "': plans are for sim:PRESET or sim:SPEC.json (run on meta devices)");
  const parallel::Layout layout{.dp = int(dp), .tp = c.tp, .pp = c.pp};
  if (c.compile) {
    plan_compiled(c, device, layout);
    return;
  }
  const DType dtype = c.precision == "bf16" ? DType::bf16 : DType::f32;
  const std::optional<models::GPTConfig> custom = gpt_by_dimensions(c);
  if (!custom && !models::family_of(c.model).gpt) {
    plan_data_parallel(c, device, dtype);
    return;
  }
  plan::PlanOptions options{.model = custom ? *custom : models::gpt_config(c.model),
                            .layout = layout,
                            .spec = device.spec,
                            .global_batch = c.batch,
                            .micro_batch = gpt_micro_batch(c, layout),
                            .seq = c.seq,
                            .dtype = dtype,
                            .schedule = parallel::parse_schedule(c.schedule),
                            .virtual_stages = c.virtual_stages,
                            .recompute = autograd::parse_recompute(c.recompute),
                            .zero = c.zero,
                            .offload = plan::offload_flag(c.offload, c.zero)};
  const plan::Plan plan = plan::plan_gpt(options);
  if (c.json) {
    std::printf("%s\n", plan::to_json_line(plan).c_str());
    return;
  }
  std::printf("%s", plan::describe(plan).c_str());
  if (plan.fits) return;
  std::printf("  %s\n", plan::fitting_flags_hint({.model = c.model,
                                                  .gpt = custom,
                                                  .layout = plan.options.layout,
                                                  .spec = device.spec,
                                                  .batch = plan.options.global_batch,
                                                  .seq = plan.options.seq,
                                                  .micro_batch = plan.options.micro_batch,
                                                  .dtype = dtype,
                                                  .schedule = plan.options.schedule,
                                                  .virtual_stages = c.virtual_stages},
                                                 {autograd::parse_recompute(c.recompute), c.zero,
                                                  plan::offload_flag(c.offload, c.zero)})
                            .c_str());
  // Say what fits on these devices, if anything does: the fastest of every layout, memory flags
  // and micro-batch.
  options.global_batch = plan.options.global_batch;
  const plan::SearchResult found = plan::search({.run = options, .devices = c.devices});
  if (found.best) {
    const plan::Plan& best = *found.best;
    std::printf(
        "  fits on %d devices: %s (dp %d), peak %s, step %.3f s, MFU %.1f %% — the fastest "
        "of %ld configurations (layouts, memory flags, micro-batches; %ld planned)\n",
        c.devices, plan::configuration_flags(best).c_str(), best.options.layout.dp,
        format_bytes(double(best.worst.peak_bytes)).c_str(), best.step_s, 100 * best.mfu,
        long(found.candidates), long(found.planned));
  } else {
    std::printf(
        "  no dp x tp x pp layout of %d devices fits with any --recompute, --zero, --offload or "
        "--micro-batch (the least: %s, peak %s): more devices\n",
        c.devices, plan::configuration_flags(found.least).c_str(),
        format_bytes(double(found.least.worst.peak_bytes)).c_str());
  }
}

}  // namespace dlf::app
