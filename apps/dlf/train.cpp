#include "train.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <optional>

#include <dlf/autograd/anomaly.h>
#include <dlf/core/autocast.h>
#include <dlf/core/calibrate.h>
#include <dlf/core/checksum.h>
#include <dlf/core/factory.h>
#include <dlf/device/sim_device.h>
#include <dlf/device/trace.h>
#include <dlf/json_line.h>
#include <dlf/models/plan.h>
#include <dlf/models/registry.h>
#include <dlf/nn/checkpoint.h>
#include <dlf/nn/optim/optimizer.h>
#include <dlf/nn/optim/schedule.h>
#include <dlf/parallel/grad_norm.h>
#include <dlf/parallel/launch.h>
#include <dlf/parallel/mpi.h>
#include <dlf/parallel/zero.h>

#include "bert_task.h"
#include "devices.h"
#include "graph_command.h"
#include "host_memory.h"
#include "interrupt.h"
#include "memory_flags.h"
#include "model_io.h"
#include "progress.h"
#include "report.h"
#include "task.h"
#include "validators.h"
#include "weights_file.h"

namespace dlf::app {
namespace {

// The share of the host's available memory a run may plan to take.
constexpr double kHostShare = 0.9;

// The dtype of the run's mixed precision (bf16), or f32.
DType precision_dtype(const TrainOptions& o) {
  return o.precision == "bf16" ? DType::bf16 : DType::f32;
}

// DDP's bucket size and whether the gradients are reduced in bf16, as the run's flags say.
int64_t bucket_bytes(const TrainOptions& o) { return o.bucket_mb << 20; }
bool reduce_in_bf16(const TrainOptions& o) { return o.grad_reduce == "bf16"; }

// On resume the run continues as the checkpoint describes it, but for what the command line
// gives again: the schedule (steps, rates, warmup, decay, clipping) takes the new values, and
// each change is said; what the data and the model depend on cannot change.
RunConfig resumed_config(const TrainOptions& o, const nn::Checkpoint& ckpt) {
  RunConfig run = run_config_from_json(ckpt.config);
  DLF_CHECK(!o.given.contains("--model") || run.model == o.run.model,
            "--resume: the checkpoint in ", o.checkpoint, " is a ", run.model, ", not a ",
            o.run.model);
  auto fixed = [&](const char* flag, const auto& was, const auto& now) {
    DLF_CHECK(!o.given.contains(flag) || was == now, "--resume: the checkpoint's run used ", flag,
              " ", detail::concat(was),
              "; a resumed run keeps its batch, sequence length, seed "
              "and data (start a new run to change them)");
  };
  fixed("--batch", run.batch, o.run.batch);
  fixed("--seq", run.seq, o.run.seq);
  fixed("--seed", run.seed, o.run.seed);
  std::string data;
  for (const std::string& path : run.data) data += (data.empty() ? "" : " ") + path;
  fixed("--data", run.data.empty() ? "(the default corpus)" : data,
        o.run.data == run.data ? (run.data.empty() ? "(the default corpus)" : data) : "");
  auto take = [&](const char* flag, auto& field, const auto& now) {
    if (!o.given.contains(flag) || field == now) return;
    std::fprintf(stderr, "resuming with %s %s (the checkpoint's run used %s)\n", flag,
                 detail::concat(now).c_str(), detail::concat(field).c_str());
    field = now;
  };
  take("--steps", run.steps, o.run.steps);
  take("--lr", run.lr, o.run.lr);
  take("--min-lr", run.min_lr, o.run.min_lr);
  take("--warmup", run.warmup, o.run.warmup);
  take("--weight-decay", run.weight_decay, o.run.weight_decay);
  take("--clip", run.grad_clip, o.run.grad_clip);
  DLF_CHECK(run.steps > ckpt.step, "--resume: the checkpoint is already at step ", ckpt.step,
            " of ", run.steps, "; pass a larger --steps to train on");
  return run;
}

// What every rank of a run shares (read-only, except the lead rank's streams).
struct Job {
  const TrainOptions& o;
  const RunConfig& run;
  parallel::Layout layout;
  int64_t micro_batch;  // sequences
  parallel::PipelineSchedule schedule;
  int virtual_stages;               // chunks of layers per pipeline rank
  const nn::Checkpoint* ckpt;       // resume from this, or null
  const nn::NamedTensors& initial;  // the whole model to start from
  int64_t parameters;               // the whole model's
  const TaskData& data;
  std::ofstream& metrics;
  std::string agreement;  // what every rank's command line must agree on
  SimSpec roofline;       // dlf profile: the device's peaks (measured on the cpu)
};

// A step on the simulated devices, the worst over the ranks.
// comm_seconds and exposed_comm_seconds are the data-parallel group's collectives' (the gradient
// reduction; ZeRO's gathers too); comm_bytes are what the rank sent in every collective.
struct SimStep {
  double seconds = 0, comm_seconds = 0, exposed_comm_seconds = 0, peak_bytes = 0, comm_bytes = 0;
};

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

std::string layout_text(const parallel::Layout& l) {
  return "dp " + std::to_string(l.dp) + " x tp " + std::to_string(l.tp) + " x pp " +
         std::to_string(l.pp);
}

std::string describe(const parallel::Layout& l, int micro_batches, int64_t micro_batch,
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

struct RankResult {
  double loss = 0;    // the last step's
  int64_t steps = 0;  // the run stands after this step
};

// One rank's training loop, the same for every model family: its task holds its part of the
// model and its share of each batch. The lead rank (world rank 0) logs and saves.
RankResult train_rank(parallel::Communicator& world, const Job& job) {
  const TrainOptions& o = job.o;
  const RunConfig& run = job.run;
  const bool lead = world.rank() == 0;
  const Device device = world.device();
  const bool simulated = device.type != DeviceType::cpu;
  const int64_t first = job.ckpt != nullptr ? job.ckpt->step : 0;
  // The forward and backward of a step, and evaluations, run under the precision's autocast.
  const DType precision = precision_dtype(o);
  auto autocast = [&](auto&& fn) {
    AutocastGuard guard(autocast_for(precision));
    return fn();
  };

  // Under mpirun every process parsed its own command line: they must describe one run.
  DLF_CHECK(!ranks_disagree(world, checksum64(job.agreement.data(), job.agreement.size())),
            "the ranks were started with different options (", job.agreement,
            " on this rank): start every rank with the same command line");
  std::optional<autograd::DetectAnomalyGuard> anomaly;
  if (o.detect_anomaly) anomaly.emplace();
  parallel::Mesh mesh(world, job.layout);
  const std::unique_ptr<RankTask> task =
      make_task({.run = run,
                 .mesh = mesh,
                 .initial = job.initial,
                 .micro_batch = job.micro_batch,
                 .schedule = job.schedule,
                 .virtual_stages = job.virtual_stages,
                 .bucket_bytes = bucket_bytes(o),
                 .eval_batches = o.eval_batches > 0 ? o.eval_batches : default_eval_batches(run),
                 .first_step = first,
                 .recompute = autograd::parse_recompute(o.recompute),
                 .zero = o.zero,
                 .offload_params = offload_flag(o.offload, o.zero) == models::Offload::params,
                 .reduce_in_bf16 = reduce_in_bf16(o),
                 .compile = o.compile},
                job.data);
  const nn::NamedTensors params = task->named_parameters();
  std::vector<Tensor> tensors;
  for (const auto& [name, p] : params) tensors.push_back(p);
  const parallel::NormScope norm_scope = task->norm_scope();
  nn::optim::AdamW opt(nn::optim::decay_groups(params, run.weight_decay),
                       {.lr = run.lr, .beta1 = 0.9, .beta2 = adam_beta2(run.model), .eps = 1e-8});
  if (offload_flag(o.offload, o.zero) != models::Offload::none)
    opt.offload(kCPU);                          // before ZeRO shards it: its parts too
  std::optional<parallel::ZeroOptimizer> zero;  // optimizer state sharded over the replicas
  if (o.zero > 0 && job.layout.dp > 1) zero.emplace(opt, mesh.dp(), *task->shards());
  // --compile: clipping and the update run inside the captured step, ZeRO-1's and -2's sharded
  // update included (an offloaded update, whose copies to the host are not captured, runs after
  // it).
  const bool update_in_graph =
      o.compile && (zero ? zero->capturable() : !opt.offloaded_to() && opt.capturable());
  Tensor norm_out = zeros({}, {.dtype = DType::f64, .device = device});
  if (job.ckpt != nullptr) {
    const nn::NamedTensors state =
        nn::optim::state_by_place(opt, task->shard_optimizer_state(job.ckpt->optimizer), params);
    if (zero) {
      zero->load_state_dict(state);
    } else {
      opt.load_state_dict(state);
    }
    default_generator().manual_seed(job.ckpt->rng_seed);
    default_generator().set_offset(job.ckpt->rng_offset);
  }

  if (update_in_graph) {
    // After a checkpoint's state, whose tensors the graph then updates.
    if (zero) {
      zero->init_state();
    } else {
      opt.init_state();
    }
    task->set_after_backward([&] {
      const Tensor norm =
          zero ? zero->clip_and_update(tensors, run.grad_clip, norm_scope)
               : nn::optim::clip_and_update(opt, tensors, run.grad_clip, [&](const auto& ps) {
                   return parallel::global_norm_on_device(ps, norm_scope);
                 });
      if (norm.defined()) norm_out.copy_(norm);  // else no gradient: the norm stays 0
    });
  }

  auto record = [&](const JsonLine& line) {
    if (!lead || !job.metrics.is_open()) return;
    job.metrics << line.str() << "\n" << std::flush;
    DLF_CHECK(job.metrics.good(), "writing the metrics file ", o.metrics, " failed (",
              std::strerror(errno), ")");
  };
  if (lead) {
    std::fprintf(stderr, "%s: %.2fM parameters, batch %s", run.model.c_str(),
                 double(job.parameters) / 1e6, task->batch_description().c_str());
    const int micro_batches = int(run.batch / job.layout.dp / job.micro_batch);
    const std::string layout =
        describe(job.layout, micro_batches, job.micro_batch, job.schedule, job.virtual_stages);
    if (world.size() > 1) {
      std::fprintf(stderr, " over %d %s (%s)", world.size(),
                   parallel::launched_by_mpi() ? "MPI processes" : "ranks", layout.c_str());
    } else if (micro_batches > 1) {
      std::fprintf(stderr, " (%s)", layout.c_str());
    }
    if (simulated) std::fprintf(stderr, " on %s", sim::spec_of(device).name.c_str());
    if (o.compile) std::fprintf(stderr, ", compiled");
    std::fprintf(stderr, ", %s from step %ld to %ld\n", first > 0 ? "resuming" : "training",
                 static_cast<long>(first), static_cast<long>(run.steps));
  }
  const int64_t warmup =
      run.warmup > 0 ? run.warmup : std::min(std::max<int64_t>(1, run.steps / 20), run.steps - 1);
  nn::optim::WarmupCosineLR schedule(opt, warmup, run.steps, run.min_lr / run.lr);
  schedule.set_step(first);
  Progress progress(first, run.steps, o.log_every, task->item_unit());
  const int64_t stop = o.until > 0 ? std::min(o.until, run.steps) : run.steps;
  std::optional<RunReport> run_report;
  if (!o.report.empty() && lead) {
    const int micro_batches = int(run.batch / job.layout.dp / job.micro_batch);
    run_report.emplace(
        ReportHeader{.model = run.model,
                     .layout = describe(job.layout, micro_batches, job.micro_batch, job.schedule,
                                        job.virtual_stages),
                     .device = simulated ? sim::spec_of(device).name : "cpu",
                     .flags = "precision " + o.precision + ", recompute " + o.recompute +
                              ", zero " + std::to_string(zero ? o.zero : 0) + ", offload " +
                              o.offload,
                     .parameters = job.parameters,
                     .item_unit = task->item_unit()},
        device, stop - first >= 2 ? first + 1 : first);  // a warm step where there is one
  }
  auto evaluate = [&](int64_t step) {  // every rank
    // The last step's gradients are used up: dropped, with its graph's arena when compiled.
    opt.zero_grad();
    const Evaluation e = autocast([&] { return task->evaluate(); });
    if (!lead) return;
    char line[160];
    std::snprintf(line, sizeof line, "step %ld: validation loss %.4f", static_cast<long>(step),
                  e.loss);
    std::string text = line;
    JsonLine json;
    json.add("step", step).add_exact("val_loss", e.loss);
    if (!e.metric.empty()) {
      std::snprintf(line, sizeof line, ", %s %.4f", e.metric.c_str(), e.value);
      text += line;
      json.add("val_" + e.metric, e.value);
    }
    progress.note(text);
    record(json);
    if (run_report) run_report->evaluation(step, e.loss);
  };
  int64_t last_saved = first;
  auto save = [&](int64_t step) {  // every rank: the shards and stages are gathered first
    opt.zero_grad();               // as evaluate: the gathers and copies need the bytes more
    const nn::NamedTensors state = zero ? zero->consolidated_state_dict() : opt.state_dict();
    auto [whole, whole_state] = task->gather_whole(nn::optim::state_by_name(opt, state, params));
    if (!lead) return;
    for (const auto& [name, t] : whole) {
      DLF_CHECK(
          all_finite(t), "step ", step, ": '", name,
          "' is not finite; not saved, so that it cannot replace a good checkpoint",
          last_saved > 0 ? " (the last, of step " + std::to_string(last_saved) + ", is kept)" : "");
    }
    nn::save_checkpoint(o.checkpoint, {.model = std::move(whole),
                                       .optimizer = std::move(whole_state),
                                       .step = step,
                                       .rng_seed = default_generator().seed(),
                                       .rng_offset = default_generator().offset(),
                                       .config = to_json(run)});
    last_saved = step;
    progress.note("step " + std::to_string(step) + ": checkpoint saved to " + o.checkpoint);
  };
  auto report = [&](int64_t step, double loss, double lr, double norm, double seconds,
                    const SimStep& s) {
    const double per_s = task->items_per_step() / seconds;
    progress.update(step, loss, per_s,
                    std::string(o.compile ? "  compiled" : "") +
                        (simulated ? describe(s, sim::spec_of(device).memory_bytes) : ""));
    JsonLine line;
    line.add("step", step + 1)
        .add_exact("loss", loss)
        .add("lr", lr)
        .add("grad_norm", norm)
        .add(std::string(task->item_unit()) + "_per_s", per_s)
        .add("step_ms", seconds * 1e3);
    if (simulated) {
      line.add("sim_step_ms", s.seconds * 1e3)
          .add(std::string("sim_") + task->item_unit() + "_per_s",
               task->items_per_step() / s.seconds)
          .add("sim_dp_comm_ms", s.comm_seconds * 1e3)
          .add("sim_exposed_dp_comm_ms", s.exposed_comm_seconds * 1e3)
          .add("sim_comm_bytes", s.comm_bytes)
          .add("sim_peak_bytes", s.peak_bytes);
    }
    record(line);
    if (run_report)
      run_report->end_step(step, loss, per_s, simulated ? task->items_per_step() / s.seconds : 0);
  };

  double loss = 0, my_peak = 0;
  std::optional<StepProfiler> profiler;
  if (o.profile && lead) profiler.emplace(*o.profile, device, job.roofline, precision, simulated);
  for (int64_t step = first; step < stop; ++step) {
    if (profiler) profiler->begin_step(step - first);
    if (run_report) run_report->begin_step(step);
    const auto start = std::chrono::steady_clock::now();
    double sim_start = 0, comm_bytes_before = 0;
    const parallel::CommSeconds dp_before = mesh.dp().seconds();
    if (simulated) {
      sim_start = sim::timeline(device).now();
      comm_bytes_before = parallel::comm_totals(device).bytes_sent;
      allocator_for(device).reset_peak();
    }
    const double trace_start = simulated ? sim_start : trace::enabled() ? trace::now() : 0;
    const double lr = opt.lr();
    opt.zero_grad();
    double norm = 0;
    try {
      if (update_in_graph) {
        if (zero) {
          zero->begin_step();
        } else {
          opt.begin_step();
        }
      }
      loss = autocast([&] { return task->forward_backward(); });
      // ZeRO-2 alone has no whole gradients: its norm adds the ranks' pieces.
      norm = update_in_graph ? norm_out.item<double>()
             : zero && !zero->whole_gradients()
                 ? zero->clip_grad_norm(tensors, run.grad_clip, norm_scope)
                 : parallel::clip_grad_norm(tensors, run.grad_clip, norm_scope);
    } catch (const Error& e) {
      if (!o.detect_anomaly) throw;
      throw Error("step " + std::to_string(step + 1) + ": " + e.what());
    }
    check_finite_step(step + 1, loss, norm, last_saved, !o.checkpoint.empty(), update_in_graph);
    if (!update_in_graph) {
      if (zero) {
        zero->step();
      } else {
        opt.step();
      }
    }
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
    const bool last = step + 1 == stop;
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (lead) report(step, loss, lr, norm, seconds, sim_step);
    if (profiler) {
      profiler->end_step(simulated ? sim_step.seconds : seconds, sim_step.exposed_comm_seconds);
    }
    if (trace::enabled()) {  // the step as a span around its ops on this rank's track
      const double end = simulated ? sim::timeline(device).now() : trace::now();
      trace::span(device, sim::Stream::compute, "step " + std::to_string(step + 1), trace_start,
                  end - trace_start);
    }
    if (!o.checkpoint.empty() && o.save_every > 0 && (step + 1) % o.save_every == 0 && !last)
      save(step + 1);
    if (o.eval_every > 0 && (step + 1) % o.eval_every == 0 && !last && !o.profile)
      evaluate(step + 1);
    if (o.check_replicas > 0 && (step + 1) % o.check_replicas == 0) {
      DLF_CHECK(!ranks_disagree(mesh.dp(), parameters_checksum(params)), "step ", step + 1,
                ": the data-parallel replicas' parameters differ (--check-replicas): they "
                "drifted apart");
    }
    const int signal =
        world.size() == 1 ? interrupt_signal() : int(world.host_max(uint64_t(interrupt_signal())));
    if (signal != 0) {  // every rank stops after the same step
      if (lead) progress.finish();
      if (!o.checkpoint.empty()) save(step + 1);
      if (run_report) run_report->write(o.report);
      return {loss, step + 1};
    }
  }
  if (lead) progress.finish();
  if (simulated) {
    const auto [text, json] = memory_by_category(world, device, job.parameters);
    if (lead) progress.note(text);
    record(json);
  }
  if (profiler) {
    const int micro_batches = int(run.batch / job.layout.dp / job.micro_batch);
    profiler->print(std::cout, run.model + " (" +
                                   describe(job.layout, micro_batches, job.micro_batch,
                                            job.schedule, job.virtual_stages) +
                                   ", " + o.precision + ")");
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
  if (!o.checkpoint.empty()) save(stop);
  if (!o.profile) evaluate(stop);  // a profile is of training steps
  if (run_report) {
    run_report->write(o.report);
    progress.note("report written to " + o.report);
  }
  return {loss, stop};
}

// Host memory is part of fitting: a layout whose ranks would not fit this machine is refused
// up front (the kernel's OOM killer would end it without a word).
void check_host_fits(double needed, const std::string& what) {
  const double available = available_host_memory();
  DLF_CHECK(needed <= kHostShare * available, what, " needs about ", format_bytes(needed),
            " of host memory (every rank's tensors live in this process, a simulated device's "
            "too), and ",
            format_bytes(available),
            " is available: use fewer --devices, a smaller --batch, or more tensor or pipeline "
            "parallelism");
}

models::PlanOptions plan_options(const TrainOptions& o, const SimSpec& spec, int64_t seq) {
  return {.model = models::gpt_config(o.run.model),
          .layout = {},
          .spec = spec,
          .global_batch = o.run.batch,
          .seq = seq,
          .dtype = precision_dtype(o),
          .schedule = parallel::parse_schedule(o.schedule),
          .virtual_stages = o.virtual_stages,
          .recompute = autograd::parse_recompute(o.recompute),
          .zero = o.zero,
          .offload = offload_flag(o.offload, o.zero)};
}

// The layout of the run: --dp, --tp and --pp as given (tp and pp 1 when unset, dp the rest of
// the devices; ZeRO-2's and the non-GPT models' are data-parallel); with --devices alone, a GPT's
// is planned on meta devices of the run's device spec: among the layouts that fit both the
// simulated devices and this machine's memory, the fastest predicted one — on cpu ranks, which
// share this machine's cores, the most data-parallel one.
parallel::Layout choose_layout(const TrainOptions& o, int devices, const DeviceArg& device,
                               int64_t seq, bool print) {
  const bool gpt = models::model_family(o.run.model) == models::ModelFamily::gpt;
  const bool cpu = device.type == DeviceType::cpu;
  const SimSpec spec = cpu ? sim_preset("a100-40gb") : device.spec;
  if (o.dp > 0 || o.tp > 0 || o.pp > 0 || o.zero >= 2 || devices == 1 || !gpt) {
    const int tp = std::max(o.tp, 1), pp = std::max(o.pp, 1);
    DLF_CHECK(o.dp > 0 || devices % (tp * pp) == 0, "tp ", tp, " x pp ", pp, " = ", tp * pp,
              " ranks per replica do not divide the ", devices, " devices");
    const int dp = o.dp > 0 ? o.dp : devices / (tp * pp);
    DLF_CHECK(dp * tp * pp == devices, "dp ", dp, " x tp ", tp, " x pp ", pp, " = ", dp * tp * pp,
              " ranks, but there are ", devices, " devices");
    const parallel::Layout layout{.dp = dp, .tp = tp, .pp = pp};
    const std::string what = o.run.model + " as " + layout_text(layout);
    if (gpt && o.run.batch % dp == 0) {
      models::PlanOptions options = plan_options(o, spec, seq);
      options.layout = layout;
      options.micro_batch =
          o.micro_batch > 0 ? o.micro_batch : models::default_micro_batch(layout, o.run.batch);
      check_host_fits(host_memory_needed(models::plan_gpt(options)), what);
    } else {
      check_host_fits(host_memory_needed(parameter_count(o.run), dp), what);
    }
    return layout;
  }
  std::vector<models::Plan> plans = models::rank_layouts(plan_options(o, spec, seq), devices);
  const double available = available_host_memory();
  auto host_fits = [&](const models::Plan& p) {
    return host_memory_needed(p) <= kHostShare * available;
  };
  if (cpu) {  // simulated speed means nothing here: the most data parallelism that fits
    std::stable_sort(plans.begin(), plans.end(), [](const models::Plan& a, const models::Plan& b) {
      return a.options.layout.dp > b.options.layout.dp;
    });
  }
  const auto chosen = std::find_if(plans.begin(), plans.end(), [&](const models::Plan& p) {
    return host_fits(p) && (cpu || p.fits);
  });
  if (print) {
    if (cpu) {
      std::fprintf(stderr,
                   "layout of %d cpu ranks (they share this machine's cores: the most data "
                   "parallelism that fits its memory, %s available):\n",
                   devices, format_bytes(available).c_str());
    } else {
      std::fprintf(stderr,
                   "layout planned on %d meta devices of %s (predicted step, peak per device, "
                   "host memory of the run; %s available):\n",
                   devices, spec.name.c_str(), format_bytes(available).c_str());
    }
    for (const models::Plan& p : plans) {
      const parallel::Layout& l = p.options.layout;
      std::string notes;
      if (!cpu && !p.fits) notes += "  does not fit the device";
      if (!host_fits(p)) notes += "  does not fit the host";
      if (&p == &*chosen) notes += "  <- chosen";
      std::fprintf(stderr, "  dp %d x tp %d x pp %d  %9.2f ms  %10s  %10s%s\n", l.dp, l.tp, l.pp,
                   p.step_s * 1e3, format_bytes(double(p.worst.peak_bytes)).c_str(),
                   format_bytes(host_memory_needed(p)).c_str(), notes.c_str());
    }
  }
  if (chosen == plans.end()) {
    const auto least = std::min_element(plans.begin(), plans.end(),
                                        [](const models::Plan& a, const models::Plan& b) {
                                          return host_memory_needed(a) < host_memory_needed(b);
                                        });
    check_host_fits(host_memory_needed(*least), o.run.model + " on " + std::to_string(devices) +
                                                    " devices (at best, as " +
                                                    layout_text(least->options.layout) + ")");
    DLF_CHECK(false, o.run.model, " does not fit ", devices, " devices of ", spec.name,
              " in any dp x tp x pp layout: use more devices or a smaller --batch");
  }
  return chosen->options.layout;
}

// "; compiled, ...": when a run out of memory on a sim device was eager and graph mode plans its
// step to fit there (its memory plan rematerialises cheap activations and reuses freed bytes),
// what to run instead; else nothing (also for a layout graph mode does not plan).
std::string compiled_fit_hint(const TrainOptions& o, const RunConfig& run,
                              const parallel::Layout& layout, int64_t tokens, int64_t micro,
                              const SimSpec& spec) {
  if (o.compile) return "";
  try {
    const CompiledPlan plan =
        plan_compiled_stages(spec, run.model, run.batch / layout.dp, tokens, o.precision,
                             {.dp = layout.dp,
                              .zero = layout.dp > 1 ? o.zero : 0,
                              .tp = layout.tp,
                              .pp = layout.pp,
                              .micro_batch = micro,
                              .schedule = parallel::parse_schedule(o.schedule),
                              .virtual_stages = o.virtual_stages,
                              .bucket_bytes = bucket_bytes(o),
                              .reduce_in_bf16 = reduce_in_bf16(o)});
    if (!plan.fits(spec)) return "";
    const bool refused = o.recompute != "none" || o.offload != "none";  // by --compile
    return std::string("; compiled, it is planned to fit: --compile") +
           (refused ? " without --recompute and --offload" : "") + " (peak " +
           format_bytes(double(plan.largest.planned_peak())) + " of " +
           format_bytes(double(spec.memory_bytes)) + ")";
  } catch (const Error&) {
    return "";
  }
}

}  // namespace

double run_train(TrainOptions o) {
  DLF_CHECK(!o.resume || !o.checkpoint.empty(), "--resume needs --checkpoint DIR");
  DLF_CHECK(o.save_every == 0 || !o.checkpoint.empty(),
            "--save-every needs --checkpoint DIR: there is nowhere to save");
  DLF_CHECK(o.checkpoint.empty() || !std::filesystem::exists(o.checkpoint) ||
                std::filesystem::is_directory(o.checkpoint),
            "--checkpoint ", o.checkpoint, " is a file, not a directory");
  apply_family_defaults(o.run, o.given);
  if (!o.given.contains("--min-lr") && o.run.min_lr > o.run.lr) o.run.min_lr = o.run.lr / 10;
  DLF_CHECK(o.run.min_lr <= o.run.lr, "--min-lr ", o.run.min_lr, " is above --lr ", o.run.lr,
            ": the cosine decays from --lr down to --min-lr");
  install_interrupt_handlers();
  std::optional<nn::Checkpoint> ckpt;
  if (o.resume) ckpt = nn::load_checkpoint(o.checkpoint);
  RunConfig run = ckpt ? resumed_config(o, *ckpt) : o.run;
  if (run.batch == 0) run.batch = default_batch(run.model);
  o.run = run;

  // The ranks: this process's threads, or one per process under mpirun.
  const bool mpi = parallel::launched_by_mpi();
  const int64_t given = o.dp > 0 || o.tp > 0 || o.pp > 0  // each at most kMaxRanks
                            ? int64_t(std::max(o.dp, 1)) * std::max(o.tp, 1) * std::max(o.pp, 1)
                            : 0;
  DLF_CHECK(given <= kMaxRanks, "dp x tp x pp = ", given, " ranks; a run has at most ", kMaxRanks,
            " (they are threads of this process)");
  int ranks = o.devices > 0 ? o.devices : (given > 0 ? int(given) : 1);
  if (mpi) {
    DLF_CHECK(o.devices == 0 || o.devices == parallel::mpi_world_size(), "under mpirun every ",
              "process is one rank: leave out --devices (or give mpirun's -np, ",
              parallel::mpi_world_size(), "); processes x in-process devices are not supported");
    DLF_CHECK(o.trace.empty(), "--trace is not supported under mpirun yet: trace one process");
    ranks = parallel::mpi_world_size();
  }
  const DeviceArg device = parse_device_arg(o.device, ranks);
  const std::vector<Device> devices = setup_devices(ranks, device);
  DLF_CHECK(devices[0].type != DeviceType::meta,
            "dlf train computes: use --device cpu or sim (meta devices are for dlf plan)");
  DLF_CHECK(o.bucket_mb > 0, "--bucket-mb must be positive");
  const bool gpt = models::model_family(run.model) == models::ModelFamily::gpt;
  const int64_t seq = gpt ? sequence_length(run, models::gpt_config(run.model)) : 0;
  const bool lead = !mpi || parallel::mpi_world_rank() == 0;
  const parallel::Layout layout = choose_layout(o, ranks, device, seq, lead);
  offload_flag(o.offload, o.zero);  // a valid combination
  DLF_CHECK(!o.compile || o.zero < 2 || layout.dp == 1 || o.offload == "none", "--compile --zero ",
            o.zero, " --offload ", o.offload, ": ZeRO-", o.zero,
            "'s update must run inside the graph, which holds its gradient parts, and an "
            "offloaded update runs on the host after it (compile without --offload, or with "
            "--zero 1)");
  if (o.profile && !o.profile->compare.empty()) {  // refused before the run, not after it
    DLF_CHECK(device.type == DeviceType::cpu, "--compare puts a sim device's predictions beside ",
              "a measured run: profile on --device cpu");
    DLF_CHECK(parse_device_arg(o.profile->compare).type == DeviceType::sim, "--compare ",
              o.profile->compare, ": expected sim:PRESET or sim:SPEC.json");
  }
  DLF_CHECK(o.offload == "none" || device.type != DeviceType::cpu, "--offload ", o.offload,
            ": on the cpu device the optimizer state is in host "
            "memory already; offload is for simulated accelerators (--device sim)");
  DLF_CHECK(o.zero < 3 || o.check_replicas == 0,
            "--check-replicas compares whole replicas: under --zero 3 each rank holds its own "
            "shard of the parameters");
  DLF_CHECK(run.batch % layout.dp == 0, "--batch ", run.batch, " does not split over dp ",
            layout.dp, ": each replica takes an equal share, so the batch must be a multiple");
  DLF_CHECK(gpt || o.micro_batch == 0, "--micro-batch ", o.micro_batch, ": ", run.model,
            " takes its replica's rows at once (micro-batches are the GPT models', through a "
            "pipeline or with their gradients accumulated)");
  const int64_t micro =
      o.micro_batch > 0 ? o.micro_batch : models::default_micro_batch(layout, run.batch);
  DLF_CHECK(run.batch / layout.dp % micro == 0, "a replica's ", run.batch / layout.dp,
            " sequences do not split into micro-batches of ", micro, " (--micro-batch)");
  const TaskData data = load_task_data(run);
  if (o.eval_every == 0) o.eval_every = default_eval_every(run, data);

  // Every rank starts from the same whole model: the checkpoint's, or one initialised once.
  nn::NamedTensors initial;
  if (ckpt) {
    std::map<std::string, Shape> shapes;
    for (const auto& [name, t] : ckpt->model) shapes.emplace(name, t.shape());
    for (const auto& [name, t] : ckpt->optimizer) {
      if (name == "step") {
        DLF_CHECK(t.numel() == 1, "--resume: ", o.checkpoint,
                  ": the optimizer's 'step' is not one number");
        continue;
      }
      const auto it = shapes.find(name.substr(0, name.rfind('.')));
      DLF_CHECK(it != shapes.end(), "--resume: ", o.checkpoint, " has optimizer state '", name,
                "' for no tensor of the model (a checkpoint of an older dlf?)");
      DLF_CHECK(t.shape() == it->second, "--resume: ", o.checkpoint, ": optimizer state '", name,
                "' has shape ", shape_str(t.shape()), " but its tensor ", shape_str(it->second),
                " (a damaged checkpoint?)");
    }
    initial = ckpt->model;
  } else if (!o.init_from.empty()) {
    const Weights weights = read_weights(o.init_from);
    run_for_weights(weights, o.init_from, run.model);  // a dlf::Error for another model's
    initial = state_from_weights(run, weights.tensors);
  } else {
    initial = initial_state(run);
  }

  std::ofstream metrics;
  if (!o.metrics.empty() && lead) {
    const std::filesystem::path parent = std::filesystem::path(o.metrics).parent_path();
    std::error_code ignored;  // a failure shows as the open's error below
    if (!parent.empty()) std::filesystem::create_directories(parent, ignored);
    metrics.open(o.metrics, o.resume ? std::ios::app : std::ios::trunc);
    DLF_CHECK(metrics.good(), "cannot write the metrics file ", o.metrics);
  }
  if (!o.report.empty() && lead) {  // refused now rather than after the run
    const std::filesystem::path parent = std::filesystem::absolute(o.report).parent_path();
    std::error_code ignored;  // a failure shows as the check below
    std::filesystem::create_directories(parent, ignored);
    DLF_CHECK(std::filesystem::is_directory(parent) && access(parent.c_str(), W_OK) == 0,
              "cannot write the report ", o.report, ": ", parent.string(),
              " is not a writable directory");
    DLF_CHECK(!std::filesystem::is_directory(o.report), "--report ", o.report,
              " is a directory: give the HTML file's name");
  }
  const Job job{
      o,
      run,
      layout,
      micro,
      parallel::parse_schedule(o.schedule),
      o.virtual_stages,
      ckpt ? &*ckpt : nullptr,
      initial,
      parameter_count(run),
      data,
      metrics,
      to_json(run) + " layout " +
          describe(layout, 1, micro, parallel::parse_schedule(o.schedule), o.virtual_stages) +
          " zero " + std::to_string(o.zero) + " recompute " + o.recompute + " offload " +
          o.offload + " precision " + o.precision + " grad-reduce " + o.grad_reduce,
      o.profile && device.type == DeviceType::cpu ? measure_cpu() : device.spec};
  if (!o.trace.empty()) trace::start();  // after measuring the CPU: its ops are not the run's
  RankResult result;
  auto rank = [&](parallel::Communicator& world) {
    const RankResult mine = train_rank(world, job);
    if (world.rank() == 0) result = mine;
  };
  try {
    if (mpi) {
      parallel::run_mpi_rank(devices[parallel::mpi_world_rank()], rank);
    } else {
      parallel::run_ranks(devices, rank);
    }
  } catch (const OutOfMemory& e) {
    if (device.type == DeviceType::cpu) throw;
    // What would fit, from the plans of this very run (a GPT's tokens as it has them, a BERT's
    // as BertTask's; ViT and UNet have none): eager's flags, and graph mode's.
    const int64_t tokens =
        models::model_family(run.model) == models::ModelFamily::bert ? bert_sequence(run.seq) : seq;
    throw OutOfMemory(std::string(e.what()) + "; " +
                      fitting_flags_hint({.model = run.model,
                                          .layout = layout,
                                          .spec = device.spec,
                                          .batch = run.batch,
                                          .seq = tokens,
                                          .micro_batch = micro,
                                          .dtype = precision_dtype(o),
                                          .schedule = parallel::parse_schedule(o.schedule),
                                          .virtual_stages = o.virtual_stages},
                                         {autograd::parse_recompute(o.recompute), o.zero,
                                          offload_flag(o.offload, o.zero)}) +
                      compiled_fit_hint(o, run, layout, tokens, micro, device.spec));
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
