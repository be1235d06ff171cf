#include <dlf/train/trainer.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <optional>
#include <ostream>

#include <dlf/autograd/anomaly.h>
#include <dlf/core/checksum.h>
#include <dlf/core/factory.h>
#include <dlf/device/device_memory.h>
#include <dlf/device/sim_device.h>
#include <dlf/device/trace.h>
#include <dlf/json_line.h>
#include <dlf/nn/data/prefetch.h>
#include <dlf/nn/optim/schedule.h>
#include <dlf/parallel/launch.h>
#include <dlf/parallel/mpi.h>
#include <dlf/train/progress.h>

namespace dlf::train {
namespace {

SimStep worst_over_ranks(parallel::Communicator& world, SimStep mine) {
  Tensor t = from_vector<double>({mine.seconds, mine.comm_seconds, mine.exposed_comm_seconds,
                                  mine.peak_bytes, mine.comm_bytes})
                 .to(world.device());
  world.allreduce(t, parallel::ReduceOp::max);
  const std::vector<double> v = t.to_vector<double>();
  return {v[0], v[1], v[2], v[3], v[4]};
}

std::string describe(const SimStep& s, int64_t capacity) {
  char text[160];
  std::snprintf(text, sizeof text,
                "  | sim %.2f ms/step (dp comm %.2f ms, %.2f exposed), peak %s%s%s",
                s.seconds * 1e3, s.comm_seconds * 1e3, s.exposed_comm_seconds * 1e3,
                format_bytes(s.peak_bytes).c_str(), capacity > 0 ? " of " : "",
                capacity > 0 ? format_bytes(double(capacity)).c_str() : "");
  return text;
}

// A rank's memory by category at the last step's peak and after it (the model states a step
// leaves: what ZeRO shards), the most over the ranks per category: one line for the lead to
// print and the same figures, with the whole model's parameter count, for the metrics file.
std::pair<std::string, JsonLine> memory_by_category(parallel::Communicator& world, Device device,
                                                    int64_t parameters) {
  const MemoryStats mine = allocator_for(device).stats();
  std::vector<double> v;
  for (const BytesByCategory* b : {&mine.at_peak_by, &mine.live_by})
    for (int64_t bytes : *b) v.push_back(double(bytes));
  Tensor t = from_vector<double>(v).to(device);
  world.allreduce(t, parallel::ReduceOp::max);
  v = t.to(kCPU).to_vector<double>();
  BytesByCategory at_peak{}, after{};
  JsonLine json;
  json.add("parameters", parameters);
  for (int c = 0; c < kMemoryCategories; ++c) {
    at_peak[c] = int64_t(v[size_t(c)]);
    after[c] = int64_t(v[size_t(kMemoryCategories + c)]);
    std::string key(memory_category_name(static_cast<MemoryCategory>(c)));
    std::replace(key.begin(), key.end(), ' ', '_');
    json.add("sim_peak_" + key + "_bytes", at_peak[c])
        .add("sim_after_step_" + key + "_bytes", after[c]);
  }
  return {"memory per device (the most over the ranks): at the last step's peak " +
              format_by_category(at_peak) + "; after it " + format_by_category(after),
          json};
}

// True on every rank when the ranks' values differ (two votes: the largest and the smallest).
bool ranks_disagree(parallel::Communicator& group, uint64_t value) {
  return group.host_max(value) != ~group.host_max(~value);
}

// A checksum of a rank's parameters, in order.
uint64_t parameters_checksum(const nn::NamedTensors& params) {
  std::vector<uint64_t> sums;
  for (const auto& [name, p] : params) sums.push_back(checksum64(p));
  return checksum64(sums.data(), sums.size() * sizeof(uint64_t));
}

// Stops a run whose loss or gradient norm is not finite, before the update could spread it
// into the weights.
void check_finite_step(int64_t step, double loss, double norm, int64_t last_saved,
                       bool checkpointing, bool updated) {
  if (std::isfinite(loss) && std::isfinite(norm)) return;
  auto text = [](double v) { return std::isnan(v) ? std::string("NaN") : detail::concat(v); };
  throw Error(detail::concat(
      "step ", step, ": the loss is ", text(loss), " and the gradient norm ", text(norm),
      updated ? "; stopped after the compiled step updated the weights in memory"
              : "; stopped before updating the weights",
      checkpointing ? (last_saved > 0 ? "; the last checkpoint (step " +
                                            std::to_string(last_saved) + ") is unchanged"
                                      : "; no checkpoint was written")
                    : "",
      ". Lower --lr, or find the op that made it with --detect-anomaly"));
}

}  // namespace

TrainResult train_ranks(const std::vector<Device>& devices, const TrainJob& job) {
  check_job(job, devices.at(0).type);
  TrainResult result;
  auto rank = [&](parallel::Communicator& world) {
    const TrainResult mine = train_rank(world, job);
    if (world.rank() == 0) result = mine;
  };
  if (parallel::launched_by_mpi())
    parallel::run_mpi_rank(devices[size_t(parallel::mpi_world_rank())], rank);
  else
    parallel::run_ranks(devices, rank);
  return result;
}

std::string layout_text(const parallel::Layout& l) {
  return "dp " + std::to_string(l.dp) + " x tp " + std::to_string(l.tp) + " x pp " +
         std::to_string(l.pp);
}

std::string describe_layout(const parallel::Layout& l, int micro_batches, int64_t micro_batch,
                            parallel::PipelineSchedule schedule, int virtual_stages) {
  std::string text = layout_text(l);
  if (l.pp > 1 || micro_batches > 1) {
    text +=
        ", " + std::to_string(micro_batches) + " micro-batches of " + std::to_string(micro_batch);
    if (l.pp > 1)
      text += std::string(" (") + parallel::schedule_label(schedule, virtual_stages) + ")";
  }
  return text;
}

int64_t warmup_steps(const RunConfig& run) {
  return run.warmup > 0 ? run.warmup
                        : std::min(std::max<int64_t>(1, run.steps / 20), run.steps - 1);
}

TrainResult train_rank(parallel::Communicator& world, const TrainJob& job) {
  const RunConfig& run = job.run;
  const bool lead = world.rank() == 0;
  const Device device = world.device();
  const bool simulated = device.type != DeviceType::cpu;
  const int64_t first = job.resume != nullptr ? job.resume->step : 0;

  // Under mpirun every process parsed its own command line: they must describe one run.
  DLF_CHECK(!ranks_disagree(world, checksum64(job.agreement.data(), job.agreement.size())),
            "the ranks were started with different options (", job.agreement,
            " on this rank): start every rank with the same command line");
  std::optional<autograd::DetectAnomalyGuard> anomaly;
  if (job.detect_anomaly) anomaly.emplace();
  parallel::Mesh mesh(world, job.layout);
  const int64_t micro_batch =
      job.micro_batch > 0 ? job.micro_batch : default_micro_batch(job.layout, run.batch);
  const int micro_batches = int(run.batch / job.layout.dp / micro_batch);
  PartOptions part = job.part;
  part.micro_batches = micro_batches;
  // AdamW as the run and its family's recipe say.
  const StepOptions step_options{.part = part,
                                 .adamw = {.lr = run.lr,
                                           .beta1 = 0.9,
                                           .beta2 = job.family.recipe.beta2,
                                           .eps = 1e-8,
                                           .weight_decay = run.weight_decay},
                                 .grad_clip = run.grad_clip,
                                 .offload_optimizer = job.offload_optimizer,
                                 .precision = job.precision};
  RankStep step(make_rank_model(job.family, run.model, mesh, job.initial, part, run.vocab), mesh,
                step_options);
  const std::unique_ptr<models::Task> task = job.family.task(
      {.model = run.model,
       .data = job.data,
       .batch = run.batch,
       .seq = run.seq,
       .seed = run.seed,
       .replicas = job.layout.dp,
       .replica = mesh.dp_rank(),
       .eval_batches = job.eval_batches > 0 ? job.eval_batches : job.family.eval_batches,
       .first_step = first,
       .eval_progress = lead ? evaluation_progress() : nullptr});
  if (job.resume != nullptr) {
    step.load_optimizer_state(job.resume->optimizer);
    default_generator().manual_seed(job.resume->rng_seed);
    default_generator().set_offset(job.resume->rng_offset);
  }
  nn::data::Prefetcher<std::vector<Tensor>> batches([&task](int64_t i) { return task->batch(i); },
                                                    first);

  auto record = [&](const JsonLine& line) {
    if (!lead || job.metrics == nullptr) return;
    *job.metrics << line.str() << "\n" << std::flush;
    DLF_CHECK(job.metrics->good(), "writing the metrics file ", job.metrics_path, " failed (",
              std::strerror(errno), ")");
  };
  const std::string layout =
      describe_layout(job.layout, micro_batches, micro_batch, part.schedule, part.virtual_stages);
  if (lead) {
    std::fprintf(stderr, "%s: %.2fM parameters, batch %s", run.model.c_str(),
                 double(job.parameters) / 1e6, task->batch_description().c_str());
    if (world.size() > 1) {
      std::fprintf(stderr, " over %d %s (%s)", world.size(),
                   parallel::launched_by_mpi() ? "MPI processes" : "ranks", layout.c_str());
    } else if (micro_batches > 1) {
      std::fprintf(stderr, " (%s)", layout.c_str());
    }
    if (simulated) std::fprintf(stderr, " on %s", sim::spec_of(device).name.c_str());
    if (part.compile) std::fprintf(stderr, ", compiled");
    std::fprintf(stderr, ", %s from step %ld to %ld%s\n", first > 0 ? "resuming" : "training",
                 static_cast<long>(first), static_cast<long>(run.steps),
                 job.checkpoint.empty() && job.say_unsaved
                     ? "; nothing will be saved (no --checkpoint)"
                     : "");
  }
  nn::optim::WarmupCosineLR schedule(step.optimizer(), warmup_steps(run), run.steps,
                                     run.min_lr / run.lr);
  schedule.set_step(first);
  Progress progress(first, run.steps, job.log_every, job.family.unit);
  const int64_t stop = job.until > 0 ? std::min(job.until, run.steps) : run.steps;
  auto evaluate = [&](int64_t at) {  // every rank
    // The last step's gradients are used up: dropped, with its graph's arena when compiled.
    step.zero_grad();
    const models::Evaluation e = step.evaluate(*task);
    if (!lead) return;
    char line[160];
    std::snprintf(line, sizeof line, "step %ld: validation loss %.4f", static_cast<long>(at),
                  e.loss);
    std::string text = line;
    JsonLine json;
    json.add("step", at).add_exact("val_loss", e.loss);
    if (!e.metric.empty()) {
      std::snprintf(line, sizeof line, ", %s %.4f", e.metric.c_str(), e.value);
      text += line;
      json.add("val_" + e.metric, e.value);
    }
    progress.note(text);
    record(json);
    if (job.hooks.evaluated) job.hooks.evaluated(at, e);
  };
  int64_t last_saved = first;
  auto save = [&](int64_t at) {  // every rank: the shards and stages are gathered first
    step.zero_grad();            // as evaluate: the gathers and copies need the bytes more
    auto [whole, whole_state] = step.gather_whole();
    if (!lead) return;
    for (const auto& [name, t] : whole) {
      DLF_CHECK(
          all_finite(t), "step ", at, ": '", name,
          "' is not finite; not saved, so that it cannot replace a good checkpoint",
          last_saved > 0 ? " (the last, of step " + std::to_string(last_saved) + ", is kept)" : "");
    }
    nn::save_checkpoint(job.checkpoint, {.model = std::move(whole),
                                         .optimizer = std::move(whole_state),
                                         .step = at,
                                         .rng_seed = default_generator().seed(),
                                         .rng_offset = default_generator().offset(),
                                         .config = to_json(run)});
    last_saved = at;
    progress.note("step " + std::to_string(at) + ": checkpoint saved to " + job.checkpoint);
  };
  auto report = [&](const StepFigures& f) {
    const std::string unit = job.family.unit;
    progress.update(f.step, f.loss, f.items_per_s,
                    std::string(part.compile ? "  compiled" : "") +
                        (simulated ? describe(f.sim, sim::spec_of(device).memory_bytes) : ""));
    JsonLine line;
    line.add("step", f.step + 1)
        .add_exact("loss", f.loss)
        .add("lr", f.lr)
        .add("grad_norm", f.grad_norm)
        .add(unit + "_per_s", f.items_per_s)
        .add("step_ms", f.seconds * 1e3);
    if (simulated) {
      line.add("sim_step_ms", f.sim.seconds * 1e3)
          .add("sim_" + unit + "_per_s", task->items_per_step() / f.sim.seconds)
          .add("sim_dp_comm_ms", f.sim.comm_seconds * 1e3)
          .add("sim_exposed_dp_comm_ms", f.sim.exposed_comm_seconds * 1e3)
          .add("sim_comm_bytes", f.sim.comm_bytes)
          .add("sim_peak_bytes", f.sim.peak_bytes);
    }
    record(line);
    if (job.hooks.end_step) job.hooks.end_step(f);
  };
  auto end = [&](bool stopped) {
    if (lead && job.hooks.ended) job.hooks.ended(layout, stopped);
  };

  double loss = 0, my_peak = 0;
  for (int64_t at = first; at < stop; ++at) {
    if (lead && job.hooks.begin_step) job.hooks.begin_step(at);
    const auto start = std::chrono::steady_clock::now();
    double sim_start = 0, comm_bytes_before = 0;
    const parallel::CommSeconds dp_before = mesh.dp().seconds();
    if (simulated) {
      sim_start = sim::timeline(device).now();
      comm_bytes_before = parallel::comm_totals(device).bytes_sent;
      allocator_for(device).reset_peak();
    }
    const double trace_start = simulated ? sim_start : trace::enabled() ? trace::now() : 0;
    const double lr = step.optimizer().lr();
    step.zero_grad();
    RankStep::Result r;
    try {
      r = step.forward_backward(batches.next());
    } catch (const Error& e) {
      if (!job.detect_anomaly) throw;
      throw Error("step " + std::to_string(at + 1) + ": " + e.what());
    }
    loss = r.loss;
    check_finite_step(at + 1, r.loss, r.grad_norm, last_saved, !job.checkpoint.empty(),
                      step.update_in_graph());
    step.update();
    schedule.step();
    SimStep sim_step;
    if (simulated) {
      const parallel::CommSeconds dp = mesh.dp().seconds();
      sim_step = {sim::timeline(device).now() - sim_start, dp.busy - dp_before.busy,
                  dp.exposed - dp_before.exposed, double(allocator_for(device).stats().peak_bytes),
                  parallel::comm_totals(device).bytes_sent - comm_bytes_before};
      my_peak = std::max(my_peak, sim_step.peak_bytes);
      if (world.size() > 1) sim_step = worst_over_ranks(world, sim_step);
    }
    const bool last = at + 1 == stop;
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (lead) {
      report({.step = at,
              .loss = r.loss,
              .lr = lr,
              .grad_norm = r.grad_norm,
              .seconds = seconds,
              .items_per_s = task->items_per_step() / seconds,
              .simulated = simulated,
              .sim = sim_step});
    }
    if (trace::enabled()) {  // the step as a span around its ops on this rank's track
      const double end_time = simulated ? sim::timeline(device).now() : trace::now();
      trace::span(device, sim::Stream::compute, "step " + std::to_string(at + 1), trace_start,
                  end_time - trace_start);
    }
    if (!job.checkpoint.empty() && job.save_every > 0 && (at + 1) % job.save_every == 0 && !last)
      save(at + 1);
    if (job.eval_every > 0 && (at + 1) % job.eval_every == 0 && !last && job.evaluate)
      evaluate(at + 1);
    if (job.check_replicas > 0 && (at + 1) % job.check_replicas == 0) {
      DLF_CHECK(!ranks_disagree(mesh.dp(), parameters_checksum(step.parameters())), "step ", at + 1,
                ": the data-parallel replicas' parameters differ (--check-replicas): they "
                "drifted apart");
    }
    const int requested = job.stop_requested ? job.stop_requested() : 0;
    const int signal = world.size() == 1 ? requested : int(world.host_max(uint64_t(requested)));
    if (signal != 0) {  // every rank stops after the same step
      if (lead) progress.finish();
      if (!job.checkpoint.empty()) save(at + 1);
      end(true);
      return {loss, at + 1};
    }
  }
  if (lead) progress.finish();
  if (simulated) {
    const auto [text, json] = memory_by_category(world, device, job.parameters);
    if (lead) progress.note(text);
    record(json);
  }
  if (simulated && job.layout.pp > 1) {  // each stage's peak: the worst of its ranks
    Tensor peak = full({1}, my_peak, {.dtype = DType::f64, .device = device});
    mesh.dp().allreduce(peak, parallel::ReduceOp::max);
    mesh.tp().allreduce(peak, parallel::ReduceOp::max);
    const std::vector<double> stages = mesh.pp().allgather(peak).to(kCPU).to_vector<double>();
    if (lead) {
      std::string text = "peak memory by pipeline stage:";
      JsonLine line;
      for (size_t s = 0; s < stages.size(); ++s) {
        text += (s == 0 ? " " : " | ") + format_bytes(stages[s]);
        line.add("sim_peak_bytes_stage" + std::to_string(s), stages[s]);
      }
      progress.note(text);
      record(line);
    }
  }
  // Saved first: an evaluation that fails (out of memory) loses none of the run's training.
  if (!job.checkpoint.empty()) save(stop);
  if (job.evaluate) evaluate(stop);
  end(false);
  return {loss, stop};
}

int64_t default_micro_batch(const parallel::Layout& layout, int64_t global_batch) {
  return layout.pp > 1 ? 1 : std::max<int64_t>(1, global_batch / layout.dp);
}

}  // namespace dlf::train
