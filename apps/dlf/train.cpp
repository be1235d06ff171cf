#include "train.h"

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <optional>

#include <dlf/core/factory.h>
#include <dlf/device/sim_device.h>
#include <dlf/device/trace.h>
#include <dlf/json_line.h>
#include <dlf/models/registry.h>
#include <dlf/nn/checkpoint.h>
#include <dlf/nn/data/prefetch.h>
#include <dlf/nn/optim/optimizer.h>
#include <dlf/nn/optim/schedule.h>
#include <dlf/parallel/ddp.h>
#include <dlf/parallel/launch.h>
#include <dlf/parallel/zero.h>

#include "devices.h"
#include "model_io.h"
#include "progress.h"

namespace dlf::app {
namespace {

using nn::data::TextBatch;

// On resume the run continues as the checkpoint describes it; only a new step target (which
// also stretches the schedule) and the model name (which must agree) come from the command line.
RunConfig resumed_config(const TrainOptions& o, const nn::Checkpoint& ckpt) {
  RunConfig run = run_config_from_json(ckpt.config);
  DLF_CHECK(run.model == o.run.model, "--resume: the checkpoint in ", o.checkpoint, " is a ",
            run.model, ", not a ", o.run.model);
  if (o.steps_given) run.steps = o.run.steps;
  DLF_CHECK(run.steps > ckpt.step, "--resume: the checkpoint is already at step ", ckpt.step,
            " of ", run.steps, "; pass a larger --steps to train on");
  return run;
}

nn::Checkpoint snapshot(const models::GPT& model, nn::NamedTensors optimizer, int64_t step,
                        const RunConfig& run) {
  return {.model = model.state_dict(),
          .optimizer = std::move(optimizer),
          .step = step,
          .rng_seed = default_generator().seed(),
          .rng_offset = default_generator().offset(),
          .config = to_json(run)};
}

// Every rank's replica lives in host memory (sim devices keep their data there too): refuse a
// run whose parameters, gradients and Adam state alone would not fit, before the kernel's OOM
// killer ends it mid-initialisation.
void check_host_memory(const std::string& model, int replicas) {
  const double needed =
      16.0 * double(models::gpt_parameter_count(models::gpt_config(model))) * replicas;
  const double host = double(sysconf(_SC_PHYS_PAGES)) * double(sysconf(_SC_PAGE_SIZE));
  DLF_CHECK(needed < host, model, ": ", replicas, " replica(s) need at least ",
            format_bytes(needed), " of host memory for parameters, gradients and Adam state; ",
            "this machine has ", format_bytes(host), ". Plan the layout instead: dlf plan --model ",
            model, " --devices N");
}

// What every rank of a run shares (read-only, except the lead rank's streams).
struct Job {
  const TrainOptions& o;
  const RunConfig& run;
  const nn::Checkpoint* ckpt;  // resume from this, or null
  const nn::data::TextDataset& data;
  std::ofstream& metrics;
};

// A step on the simulated devices, the worst over the ranks.
struct SimStep {
  double seconds = 0, comm_seconds = 0, exposed_comm_seconds = 0, peak_bytes = 0;
};

SimStep worst_over_ranks(parallel::Communicator& world, SimStep mine) {
  Tensor t = from_vector<double>(
                 {mine.seconds, mine.comm_seconds, mine.exposed_comm_seconds, mine.peak_bytes})
                 .to(world.device());
  world.allreduce(t, parallel::ReduceOp::max);
  const std::vector<double> v = t.to_vector<double>();
  return {v[0], v[1], v[2], v[3]};
}

std::string describe(const SimStep& s, int64_t capacity) {
  char text[160];
  std::snprintf(text, sizeof text,
                "  | sim %.2f ms/step (allreduce %.2f ms, %.2f exposed), peak %s%s%s",
                s.seconds * 1e3, s.comm_seconds * 1e3, s.exposed_comm_seconds * 1e3,
                format_bytes(s.peak_bytes).c_str(), capacity > 0 ? " of " : "",
                capacity > 0 ? format_bytes(double(capacity)).c_str() : "");
  return text;
}

// One rank's training loop. Every rank holds a replica and takes its share of each batch; the
// lead rank (0) logs, evaluates and saves. Returns the last step's loss over the whole batch.
double train_rank(parallel::Communicator& world, const Job& job) {
  const TrainOptions& o = job.o;
  const RunConfig& run = job.run;
  const bool lead = world.rank() == 0;
  const int ranks = world.size();
  const Device device = world.device();
  const bool simulated = device.type != DeviceType::cpu;

  std::unique_ptr<models::GPT> model = build_model(run);  // seeds this rank's generator
  model->to(device);
  const int64_t seq = sequence_length(run, *model);
  nn::optim::Adam opt =
      nn::optim::AdamW(nn::optim::decay_groups(model->named_parameters(), run.weight_decay),
                       {.lr = run.lr, .beta1 = 0.9, .beta2 = 0.95, .eps = 1e-8});
  std::optional<parallel::ZeroOptimizer> zero;  // optimizer state sharded over the ranks
  if (o.zero && ranks > 1) zero.emplace(opt, world);
  int64_t first = 0;
  if (job.ckpt != nullptr) {
    nn::restore_module(*model, *job.ckpt);
    if (zero) {
      zero->load_state_dict(job.ckpt->optimizer);
    } else {
      opt.load_state_dict(job.ckpt->optimizer);
    }
    default_generator().manual_seed(job.ckpt->rng_seed);
    default_generator().set_offset(job.ckpt->rng_offset);
    first = job.ckpt->step;
  }
  std::optional<parallel::DistributedDataParallel> ddp;
  if (ranks > 1)
    ddp.emplace(*model, world, parallel::DDPOptions{.bucket_bytes = o.bucket_mb << 20});

  auto record = [&](const JsonLine& line) {
    if (lead && job.metrics.is_open()) job.metrics << line.str() << "\n" << std::flush;
  };
  if (lead) {
    std::fprintf(stderr, "%s: %.2fM parameters, batch %ld x %ld tokens", run.model.c_str(),
                 double(model->num_parameters()) / 1e6, static_cast<long>(run.batch),
                 static_cast<long>(seq));
    if (ranks > 1) std::fprintf(stderr, " over %d ranks", ranks);
    if (simulated) std::fprintf(stderr, " on %s", sim::spec_of(device).name.c_str());
    std::fprintf(stderr, ", %s from step %ld to %ld\n", first > 0 ? "resuming" : "training",
                 static_cast<long>(first), static_cast<long>(run.steps));
  }
  const int64_t warmup =
      run.warmup > 0 ? run.warmup : std::min(std::max<int64_t>(1, run.steps / 20), run.steps - 1);
  const int64_t rows = run.batch / ranks, row0 = world.rank() * rows;
  nn::data::Prefetcher<TextBatch> batches(
      [&](int64_t step) {
        TextBatch b = job.data.sample(nn::data::Split::train, step, run.batch, seq, run.seed);
        if (ranks > 1)
          b = {b.x.narrow(0, row0, rows).contiguous(), b.y.narrow(0, row0, rows).contiguous()};
        return b;
      },
      first);
  Progress progress(first, run.steps, o.log_every);
  auto evaluate = [&](int64_t step) {
    const double val = validation_loss(*model, job.data, o.eval_batches, run.batch, seq);
    char line[96];
    std::snprintf(line, sizeof line, "step %ld: validation loss %.4f", static_cast<long>(step),
                  val);
    progress.note(line);
    record(JsonLine().add("step", step).add_exact("val_loss", val));
  };
  auto save = [&](int64_t step) {  // every rank: a sharded optimizer state is gathered first
    nn::NamedTensors state = zero ? zero->consolidated_state_dict() : opt.state_dict();
    if (!lead) return;
    nn::save_checkpoint(o.checkpoint, snapshot(*model, std::move(state), step, run));
    progress.note("step " + std::to_string(step) + ": checkpoint saved to " + o.checkpoint);
  };
  auto report = [&](int64_t step, double loss, double norm, double seconds, const SimStep& s) {
    const double tokens_per_s = double(run.batch * seq) / seconds;
    progress.update(step, loss, tokens_per_s,
                    simulated ? describe(s, sim::spec_of(device).memory_bytes) : "");
    JsonLine line;
    line.add("step", step + 1)
        .add_exact("loss", loss)
        .add("lr", opt.lr())
        .add("grad_norm", norm)
        .add("tokens_per_s", tokens_per_s)
        .add("step_ms", seconds * 1e3);
    if (simulated) {
      line.add("sim_step_ms", s.seconds * 1e3)
          .add("sim_tokens_per_s", double(run.batch * seq) / s.seconds)
          .add("sim_allreduce_ms", s.comm_seconds * 1e3)
          .add("sim_exposed_allreduce_ms", s.exposed_comm_seconds * 1e3)
          .add("sim_peak_bytes", s.peak_bytes);
    }
    record(line);
  };

  const int64_t stop = o.until > 0 ? std::min(o.until, run.steps) : run.steps;
  double loss_value = 0;
  for (int64_t step = first; step < stop; ++step) {
    const auto start = std::chrono::steady_clock::now();
    double sim_start = 0;
    if (simulated) {
      sim_start = sim::timeline(device).now();
      allocator_for(device).reset_peak();
    }
    opt.set_lr(nn::optim::warmup_cosine_lr(step, run.lr, warmup, run.steps, run.min_lr));
    const TextBatch batch = batches.next();
    opt.zero_grad();
    Tensor loss;
    {
      MemoryScope activations(MemoryCategory::activations);
      loss = model->loss(batch.x.to(device), batch.y.to(device));
    }
    loss.backward();
    if (ddp) ddp->synchronize();
    const double norm = zero ? zero->clip_grad_norm(model->parameters(), run.grad_clip)
                             : nn::optim::clip_grad_norm(model->parameters(), run.grad_clip);
    if (zero) {
      zero->step();
    } else {
      opt.step();
    }
    SimStep sim_step;
    if (simulated) {
      sim_step = {sim::timeline(device).now() - sim_start, ddp ? ddp->comm_seconds() : 0,
                  ddp ? ddp->exposed_comm_seconds() : 0,
                  double(allocator_for(device).stats().peak_bytes)};
    }
    // Logging: the loss over the whole batch and the worst rank's simulated step.
    Tensor global_loss = loss.detach();
    if (ranks > 1) {
      global_loss = global_loss.clone();
      world.allreduce(global_loss, parallel::ReduceOp::avg);
      if (simulated) sim_step = worst_over_ranks(world, sim_step);
    }
    loss_value = global_loss.item<double>();
    const bool last = step + 1 == stop;
    if (lead) {
      report(step, loss_value, norm,
             std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(),
             sim_step);
      if (o.eval_every > 0 && (step + 1) % o.eval_every == 0 && !last) evaluate(step + 1);
    }
    if (!o.checkpoint.empty() && o.save_every > 0 && (step + 1) % o.save_every == 0 && !last)
      save(step + 1);
  }
  if (lead) {
    progress.finish();
    evaluate(stop);
  }
  if (!o.checkpoint.empty()) save(stop);
  return loss_value;
}

}  // namespace

double run_train(TrainOptions o) {
  DLF_CHECK(!o.resume || !o.checkpoint.empty(), "--resume needs --checkpoint DIR");
  std::optional<nn::Checkpoint> ckpt;
  if (o.resume) ckpt = nn::load_checkpoint(o.checkpoint);
  const RunConfig run = ckpt ? resumed_config(o, *ckpt) : o.run;
  const std::vector<Device> devices = setup_devices(o.devices, o.device);
  DLF_CHECK(run.batch % o.devices == 0, "--batch ", run.batch, " does not split over --devices ",
            o.devices, ": each rank takes an equal share, so the batch must be a multiple");
  DLF_CHECK(devices[0].type != DeviceType::meta,
            "dlf train computes: use --device cpu or sim (meta devices are for dlf plan)");
  DLF_CHECK(o.trace.empty() || devices[0].type == DeviceType::sim,
            "--trace records the simulated devices' timelines: use --device sim[:PRESET]");
  DLF_CHECK(o.bucket_mb > 0, "--bucket-mb must be positive");
  check_host_memory(run.model, o.devices);
  const nn::data::TextDataset data = open_dataset(run);

  std::ofstream metrics;
  if (!o.metrics.empty()) {
    const std::filesystem::path parent = std::filesystem::path(o.metrics).parent_path();
    std::error_code ignored;  // a failure shows as the open's error below
    if (!parent.empty()) std::filesystem::create_directories(parent, ignored);
    metrics.open(o.metrics, o.resume ? std::ios::app : std::ios::trunc);
    DLF_CHECK(metrics.good(), "cannot write the metrics file ", o.metrics);
  }
  if (!o.trace.empty()) trace::start();
  const Job job{o, run, ckpt ? &*ckpt : nullptr, data, metrics};
  double loss = 0;
  parallel::run_ranks(devices, [&](parallel::Communicator& world) {
    const double l = train_rank(world, job);
    if (world.rank() == 0) loss = l;
  });
  if (!o.trace.empty()) {
    trace::stop_and_write(o.trace);
    std::fprintf(stderr, "trace written to %s (open in https://ui.perfetto.dev)\n",
                 o.trace.c_str());
  }
  return loss;
}

}  // namespace dlf::app
