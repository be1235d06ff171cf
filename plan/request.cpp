#include <dlf/plan/request.h>

#include <optional>

#include <dlf/device/sim_system.h>
#include <dlf/models/registry.h>
#include <dlf/parallel/device_arg.h>
#include <dlf/plan/compiled.h>
#include <dlf/plan/memory_flags.h>
#include <dlf/plan/plan.h>
#include <dlf/plan/reports.h>
#include <dlf/plan/search.h>

namespace dlf::plan {
namespace {

// A GPT's micro-batch over `layout` as dlf train takes it: --micro-batch, else one sequence
// through a pipeline and a replica's rows without one (train::default_micro_batch).
int64_t gpt_micro_batch(const PlanRequest& c, const parallel::Layout& layout) {
  return c.micro_batch > 0 ? c.micro_batch : train::default_micro_batch(layout, c.batch);
}

// Micro-batches are a GPT's, as dlf train runs them: a model of another family takes its
// replica's rows at once.
void check_micro_batch(const PlanRequest& c, const std::string& model, bool gpt) {
  DLF_CHECK(gpt || c.micro_batch == 0, "--micro-batch ", c.micro_batch, ": ", model,
            " takes its replica's rows at once (micro-batches are the GPT models')");
}

// Any family, data-parallel: planned from the model itself on a meta device.
void plan_data_parallel(const PlanRequest& c, const parallel::DeviceArg& device, DType dtype,
                        const PlanOut& out) {
  DLF_CHECK(c.tp == 1 && c.pp == 1, "dlf plan: ", c.model,
            " plans data-parallel layouts (--tp and --pp plans are GPT's)");
  check_micro_batch(c, c.model, false);
  const ReplicaPlan plan = plan_replica({.model = c.model,
                                         .dp = c.devices,
                                         .spec = device.spec,
                                         .global_batch = c.batch,
                                         .seq = c.seq,
                                         .dtype = dtype,
                                         .recompute = autograd::parse_recompute(c.recompute),
                                         .zero = c.zero,
                                         .offload = offload_flag(c.offload, c.zero)});
  out(c.json ? to_json_line(plan) + "\n" : describe(plan));
  if (!c.json && !plan.fits)
    out("  " +
        fitting_flags_hint(
            {.model = c.model,
             .layout = {.dp = c.devices},
             .spec = device.spec,
             .batch = plan.options.global_batch,
             .seq = plan.options.seq,
             .dtype = dtype},
            {autograd::parse_recompute(c.recompute), c.zero, offload_flag(c.offload, c.zero)}) +
        "\n");
}

// A GPT given by --layers, --hidden and --heads, or none.
std::optional<models::GPTConfig> gpt_by_dimensions(const PlanRequest& c) {
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
void plan_compiled(const PlanRequest& c, const parallel::DeviceArg& device,
                   const parallel::Layout& layout, const PlanOut& out) {
  const int64_t dp = layout.dp;
  DLF_CHECK(c.recompute == "none" && c.offload == "none",
            "dlf plan --compile: graph mode rematerialises on its own and captures ZeRO without "
            "offload; leave out --recompute and --offload");
  const std::optional<models::GPTConfig> custom = gpt_by_dimensions(c);
  const StepModel model = custom ? StepModel(*custom) : StepModel(c.model);
  // --seq's default as the other plans': a GPT's context, BERT's benchmark length
  const int64_t seq = model.gpt ? (c.seq > 0 ? c.seq : model.gpt->context)
                                : models::family_of(c.model).sequence(c.model, c.seq);
  check_micro_batch(c, model.name, model.gpt.has_value());
  // A replica's rows; a GPT takes them in micro-batches as dlf train does
  const int64_t micro = gpt_micro_batch(c, layout);
  const int64_t rows = c.batch / dp;
  DLF_CHECK(rows % micro == 0, "dlf plan --compile: a replica's ", rows,
            " sequences do not split into micro-batches of ", micro, " (--micro-batch)");
  // ZeRO over one rank is the plain optimizer
  const CompiledRun run{.model = model,
                        .spec = device.spec,
                        .replicas = {.dp = layout.dp,
                                     .zero = dp > 1 ? c.zero : 0,
                                     .tp = c.tp,
                                     .pp = c.pp,
                                     .micro_batch = model.gpt ? micro : 0,
                                     .schedule = parallel::parse_schedule(c.schedule),
                                     .virtual_stages = c.virtual_stages},
                        .rows = rows,
                        .precision = c.precision};
  const CompiledPlan plan =
      plan_compiled_stages(device.spec, model, rows, seq, c.precision, run.replicas);
  out(c.json ? to_json_line(plan, run) + "\n" : describe(plan, run));
}

}  // namespace

void plan_request(PlanRequest c, const PlanOut& out) {
  if (!c.system.empty()) {
    const SystemDevices machine = system_devices(c.system, c.nodes);
    c.devices = machine.devices;
    c.device = "sim:" + sim_system(c.system).preset;
  }
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
  const parallel::DeviceArg device = parallel::parse_device_arg(c.device);
  DLF_CHECK(device.type != DeviceType::cpu, "--device '", c.device,
            "': plans are for sim:PRESET or sim:SPEC.json (run on meta devices)");
  const parallel::Layout layout{.dp = int(dp), .tp = c.tp, .pp = c.pp};
  if (c.compile) {
    plan_compiled(c, device, layout, out);
    return;
  }
  const DType dtype = c.precision == "bf16" ? DType::bf16 : DType::f32;
  const std::optional<models::GPTConfig> custom = gpt_by_dimensions(c);
  if (!custom && !models::family_of(c.model).gpt) {
    plan_data_parallel(c, device, dtype, out);
    return;
  }
  PlanOptions options{.model = custom ? *custom : models::gpt_config(c.model),
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
                      .offload = offload_flag(c.offload, c.zero)};
  const Plan plan = plan_gpt(options);
  if (c.json) {
    out(to_json_line(plan) + "\n");
    return;
  }
  out(describe(plan));
  if (plan.fits) return;
  out("  " +
      fitting_flags_hint(
          {.model = c.model,
           .gpt = custom,
           .layout = plan.options.layout,
           .spec = device.spec,
           .batch = plan.options.global_batch,
           .seq = plan.options.seq,
           .micro_batch = plan.options.micro_batch,
           .dtype = dtype,
           .schedule = plan.options.schedule,
           .virtual_stages = c.virtual_stages},
          {autograd::parse_recompute(c.recompute), c.zero, offload_flag(c.offload, c.zero)}) +
      "\n");
  // Say what fits on these devices, if anything does: the fastest of every layout, memory flags
  // and micro-batch.
  options.global_batch = plan.options.global_batch;
  const SearchResult found = search({.run = options, .devices = c.devices});
  out(describe(found, c.devices));
}

}  // namespace dlf::plan
