#include "train.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <optional>

#include <dlf/autograd/calibrate.h>
#include <dlf/core/autocast.h>
#include <dlf/device/atomic_file.h>
#include <dlf/device/cpu_features.h>
#include <dlf/device/sim_device.h>
#include <dlf/device/trace.h>
#include <dlf/models/registry.h>
#include <dlf/nn/checkpoint.h>
#include <dlf/parallel/device_arg.h>
#include <dlf/parallel/mpi.h>
#include <dlf/plan/run_choice.h>
#include <dlf/train/resume.h>
#include <dlf/train/run.h>
#include <dlf/train/run_watch.h>
#include <dlf/train/trainer.h>
#include <dlf/train/weights_file.h>

#include "interrupt.h"
#include "validators.h"

namespace dlf::app {
namespace {

// The dtype of the run's mixed precision (bf16), or f32.
DType precision_dtype(const TrainOptions& o) {
  return o.precision == "bf16" ? DType::bf16 : DType::f32;
}

// DDP's bucket size and whether the gradients are reduced in bf16, as the run's flags say.
int64_t bucket_bytes(const TrainOptions& o) { return o.bucket_mb << 20; }
bool reduce_in_bf16(const TrainOptions& o) { return o.grad_reduce == "bf16"; }

}  // namespace

double run_train(TrainOptions o) {
  DLF_CHECK(!o.resume || !o.checkpoint.empty(), "--resume needs --checkpoint DIR");
  DLF_CHECK(o.save_every == 0 || !o.checkpoint.empty(),
            "--save-every needs --checkpoint DIR: there is nowhere to save");
  DLF_CHECK(o.checkpoint.empty() || !std::filesystem::exists(o.checkpoint) ||
                std::filesystem::is_directory(o.checkpoint),
            "--checkpoint ", o.checkpoint, " is a file, not a directory");
  train::apply_recipe(o.run, o.given);
  train::record_tokenizer(o.run);
  if (!o.resume && !o.checkpoint.empty())
    train::check_not_replacing(
        o.checkpoint, o.overwrite,
        "continue it with --resume, or start a new run over it with --overwrite");
  install_interrupt_handlers();
  std::optional<nn::Checkpoint> ckpt;
  if (o.resume) ckpt = nn::load_checkpoint(o.checkpoint);
  train::RunConfig run = ckpt ? train::resumed_config(*ckpt, o.checkpoint, o.run, o.given) : o.run;
  const models::Family& family = models::family_of(run.model);
  if (run.batch == 0) run.batch = family.default_batch(run.model);
  o.run = run;

  // The ranks: this process's threads, or one per process under mpirun.
  const bool mpi = parallel::launched_by_mpi();
  const int ranks = parallel::count_ranks(o.devices, o.dp, o.tp, o.pp);
  DLF_CHECK(!mpi || o.trace.empty(),
            "--trace is not supported under mpirun yet: trace one process");
  const parallel::DeviceArg device = parallel::parse_device_arg(o.device, ranks);
  const std::vector<Device> devices = parallel::setup_devices(ranks, device);
  DLF_CHECK(devices[0].type != DeviceType::meta,
            "dlf train computes: use --device cpu or sim (meta devices are for dlf plan)");
  DLF_CHECK(o.bucket_mb > 0, "--bucket-mb must be positive");
  const bool gpt = bool(family.gpt);
  const int64_t seq = family.sequence(run.model, run.seq);
  const bool lead = !mpi || parallel::mpi_world_rank() == 0;
  plan::Offload offload = plan::offload_flag(o.offload, o.zero);  // a valid combination
  const plan::RunChoice chosen = plan::choose_run(
      {.model = run.model,
       .devices = ranks,
       .dp = o.dp,
       .tp = o.tp,
       .pp = o.pp,
       .micro_batch = o.micro_batch,
       .cpu = device.type == DeviceType::cpu,
       .run = {.model = gpt ? family.gpt(run.model, run.vocab) : models::GPTConfig{},
               .layout = {},
               .spec = device.type == DeviceType::cpu ? sim_preset("a100-40gb") : device.spec,
               .global_batch = run.batch,
               .seq = seq,
               .dtype = precision_dtype(o),
               .schedule = parallel::parse_schedule(o.schedule),
               .virtual_stages = o.virtual_stages,
               .recompute = autograd::parse_recompute(o.recompute),
               .zero = o.zero,
               .offload = offload}},
      {.recompute = o.given.contains("--recompute"),
       .zero = o.given.contains("--zero"),
       .offload = o.given.contains("--offload") || o.compile,  // compiled: never offloaded
       .micro_batch = o.given.contains("--micro-batch")});
  const plan::LayoutChoice& choice = chosen.layout;
  if (chosen.searched) {
    o.recompute = autograd::recompute_name(chosen.flags.recompute);
    o.zero = chosen.flags.zero;
    o.offload = plan::offload_name(offload = chosen.flags.offload);
    o.micro_batch = chosen.micro_batch;
  }
  if (!choice.refusal.empty()) {
    if (lead) std::fprintf(stderr, "%s", choice.table.c_str());
    throw Error(choice.refusal);
  }
  const parallel::Layout layout = choice.layout;
  const parallel::PipelineSchedule schedule = parallel::parse_schedule(o.schedule);
  if (o.profile && !o.profile->compare.empty()) {  // refused before the run, not after it
    DLF_CHECK(device.type == DeviceType::cpu, "--compare puts a sim device's predictions beside ",
              "a measured run: profile on --device cpu");
    DLF_CHECK(parallel::parse_device_arg(o.profile->compare).type == DeviceType::sim, "--compare ",
              o.profile->compare, ": expected sim:PRESET or sim:SPEC.json");
  }
  const int64_t micro =
      o.micro_batch > 0 ? o.micro_batch : train::default_micro_batch(layout, run.batch);
  const models::TrainData data = train::load_data(run);
  if (o.eval_every == 0) o.eval_every = train::default_eval_every(run, data);

  // Every rank starts from the same whole model: the checkpoint's, or one initialised once.
  nn::NamedTensors initial;
  if (ckpt) {
    train::check_optimizer_state(*ckpt, o.checkpoint);
    initial = ckpt->model;
  } else if (!o.init_from.empty()) {
    const train::Weights weights = train::read_weights(o.init_from);
    train::run_for_weights(weights, o.init_from, run.model);  // a dlf::Error for another model's
    initial = train::state_from_weights(run, weights.tensors);
  } else {
    initial = train::initial_state(run);
  }
  const int64_t parameters = train::parameter_count(run.model, run.vocab);

  train::TrainJob job{
      .run = run,
      .family = family,
      .layout = layout,
      .micro_batch = o.micro_batch,
      .part = {.schedule = schedule,
               .virtual_stages = o.virtual_stages,
               .bucket_bytes = bucket_bytes(o),
               .zero = o.zero,
               .offload_params = offload == plan::Offload::params,
               .reduce_in_bf16 = reduce_in_bf16(o),
               .recompute = autograd::parse_recompute(o.recompute),
               .compile = o.compile},
      .offload_optimizer = offload != plan::Offload::none,
      .precision = precision_dtype(o),
      .data = data,
      .initial = initial,
      .resume = ckpt ? &*ckpt : nullptr,
      .parameters = parameters,
      .checkpoint = o.checkpoint,
      .until = o.until,
      .save_every = o.save_every,
      .eval_every = o.eval_every,
      .eval_batches = o.eval_batches,
      .log_every = o.log_every,
      .check_replicas = o.check_replicas,
      .evaluate = !o.profile,
      .say_unsaved = !o.profile,
      .agreement = train::to_json(run) + " layout " +
                   train::describe_layout(layout, 1, micro, schedule, o.virtual_stages) + " zero " +
                   std::to_string(o.zero) + " recompute " + o.recompute + " offload " + o.offload +
                   " precision " + o.precision + " grad-reduce " + o.grad_reduce,
      .metrics_path = o.metrics,
      .detect_anomaly = o.detect_anomaly,
      .stop_requested = interrupt_signal};
  train::check_job(job, device.type);

  // Every output is checked before the first step, not found unwritable after the last.
  std::ofstream metrics;
  if (lead) {
    if (!o.checkpoint.empty())
      check_writable(std::filesystem::path(o.checkpoint) / "checkpoint.h5", "--checkpoint",
                     train::checkpoint_room(o.checkpoint, parameters));
    if (!o.trace.empty()) check_writable(o.trace, "--trace");
    if (!o.report.empty()) check_writable(o.report, "--report");
    if (!o.metrics.empty()) {
      check_writable(o.metrics, "--metrics");
      metrics.open(o.metrics, o.resume ? std::ios::app : std::ios::trunc);
      DLF_CHECK(metrics.good(), "cannot write the metrics file ", o.metrics);
    }
  }
  const SimSpec roofline =
      o.profile && device.type == DeviceType::cpu ? autograd::measure_cpu() : device.spec;
  train::RunWatch watch(
      {.header = {.model = run.model,
                  .layout = train::describe_layout(layout, int(run.batch / layout.dp / micro),
                                                   micro, schedule, o.virtual_stages),
                  .device = device.type == DeviceType::cpu ? "cpu" : sim::spec_of(devices[0]).name,
                  .flags = "precision " + o.precision + ", recompute " + o.recompute + ", zero " +
                           std::to_string(o.zero > 0 && layout.dp > 1 ? o.zero : 0) + ", offload " +
                           o.offload,
                  .parameters = parameters,
                  .item_unit = family.unit},
       .report = o.report,
       .profile = o.profile,
       .precision = bf16_computes_in_f32(precision_dtype(o), devices[0]) ? "fp32" : o.precision,
       .device = devices[0],
       .roofline = roofline,
       .first = ckpt ? ckpt->step : 0,
       .stop = o.until > 0 ? std::min(o.until, run.steps) : run.steps});
  job.metrics = metrics.is_open() ? &metrics : nullptr;
  job.hooks = watch.hooks();
  if (o.device == "auto" && device.type == DeviceType::sim && lead)  // all checked: said first
    std::fprintf(stderr,
                 "%d ranks on simulated %s devices (this CPU computes; memory and time are the "
                 "simulator's): --device cpu runs them on this CPU\n",
                 ranks, device.spec.name.c_str());
  if (lead && bf16_computes_in_f32(precision_dtype(o), devices[0]))
    std::fprintf(stderr,
                 "this host has no fast bf16 (oneDNN ISA: %s): --precision bf16 computes in "
                 "fp32, which is faster here, and takes fp32's memory\n",
                 cpu_isa_name().c_str());
  if (lead) std::fprintf(stderr, "%s", choice.table.c_str());
  if (!o.trace.empty()) trace::start();  // after measuring the CPU: its ops are not the run's
  train::TrainResult result;
  try {
    result = train::train_ranks(devices, job);
  } catch (const OutOfMemory& e) {
    if (device.type == DeviceType::cpu) throw;
    // What would fit, from the plans of this very run: eager's flags, and graph mode's.
    throw OutOfMemory(std::string(e.what()) + "; " +
                      plan::out_of_memory_hint(
                          {.query = {.model = run.model,
                                     .layout = layout,
                                     .spec = device.spec,
                                     .batch = run.batch,
                                     .seq = seq,
                                     .micro_batch = micro,
                                     .dtype = precision_dtype(o),
                                     .schedule = schedule,
                                     .virtual_stages = o.virtual_stages},
                           .flags = {autograd::parse_recompute(o.recompute), o.zero, offload},
                           .compile = o.compile,
                           .precision = o.precision,
                           .bucket_bytes = bucket_bytes(o),
                           .reduce_in_bf16 = reduce_in_bf16(o)}));
  }
  if (!o.trace.empty()) {
    trace::stop_and_write(o.trace);
    std::fprintf(stderr, "trace written to %s (open in https://ui.perfetto.dev)\n",
                 o.trace.c_str());
  }
  if (const int signal = interrupt_signal()) {
    throw Interrupted(signal, std::string("interrupted by ") + signal_name(signal) +
                                  " after step " + std::to_string(result.steps) + "; " +
                                  (o.checkpoint.empty() ? "nothing saved (no --checkpoint)"
                                                        : "checkpoint saved to " + o.checkpoint +
                                                              " (continue with --resume)"));
  }
  return result.loss;
}

}  // namespace dlf::app
