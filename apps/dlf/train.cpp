#include "train.h"

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <optional>

#include <dlf/json_line.h>
#include <dlf/nn/checkpoint.h>
#include <dlf/nn/data/prefetch.h>
#include <dlf/nn/optim/optimizer.h>
#include <dlf/nn/optim/schedule.h>

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

nn::Checkpoint snapshot(const models::GPT& model, const nn::optim::Optimizer& opt, int64_t step,
                        const RunConfig& run) {
  return {.model = model.state_dict(),
          .optimizer = opt.state_dict(),
          .step = step,
          .rng_seed = default_generator().seed(),
          .rng_offset = default_generator().offset(),
          .config = to_json(run)};
}

}  // namespace

double run_train(TrainOptions o) {
  DLF_CHECK(!o.resume || !o.checkpoint.empty(), "--resume needs --checkpoint DIR");
  std::optional<nn::Checkpoint> ckpt;
  if (o.resume) ckpt = nn::load_checkpoint(o.checkpoint);
  const RunConfig run = ckpt ? resumed_config(o, *ckpt) : o.run;

  std::unique_ptr<models::GPT> model = build_model(run);
  const int64_t seq = sequence_length(run, *model);
  const nn::data::TextDataset data = open_dataset(run);
  nn::optim::Adam opt =
      nn::optim::AdamW(nn::optim::decay_groups(model->named_parameters(), run.weight_decay),
                       {.lr = run.lr, .beta1 = 0.9, .beta2 = 0.95, .eps = 1e-8});
  int64_t first = 0;
  if (ckpt) {
    nn::restore_module(*model, *ckpt);
    opt.load_state_dict(ckpt->optimizer);
    default_generator().manual_seed(ckpt->rng_seed);
    default_generator().set_offset(ckpt->rng_offset);
    first = ckpt->step;
    ckpt.reset();
  }
  std::ofstream metrics;
  if (!o.metrics.empty()) {
    const std::filesystem::path parent = std::filesystem::path(o.metrics).parent_path();
    std::error_code ignored;  // a failure shows as the open's error below
    if (!parent.empty()) std::filesystem::create_directories(parent, ignored);
    metrics.open(o.metrics, o.resume ? std::ios::app : std::ios::trunc);
    DLF_CHECK(metrics.good(), "cannot write the metrics file ", o.metrics);
  }
  auto record = [&](const JsonLine& line) {
    if (metrics.is_open()) metrics << line.str() << "\n" << std::flush;
  };

  std::fprintf(stderr, "%s: %.2fM parameters, batch %ld x %ld tokens, %s from step %ld to %ld\n",
               run.model.c_str(), double(model->num_parameters()) / 1e6,
               static_cast<long>(run.batch), static_cast<long>(seq),
               first > 0 ? "resuming" : "training", static_cast<long>(first),
               static_cast<long>(run.steps));
  const int64_t warmup = run.warmup > 0 ? run.warmup : std::max<int64_t>(1, run.steps / 20);
  nn::data::Prefetcher<TextBatch> batches(
      [&](int64_t step) {
        return data.sample(nn::data::Split::train, step, run.batch, seq, run.seed);
      },
      first);
  Progress progress(first, run.steps, o.log_every);
  auto evaluate = [&](int64_t step) {
    const double val = validation_loss(*model, data, o.eval_batches, run.batch, seq);
    char line[96];
    std::snprintf(line, sizeof line, "step %ld: validation loss %.4f", static_cast<long>(step),
                  val);
    progress.note(line);
    record(JsonLine().add("step", step).add_exact("val_loss", val));
  };
  auto save = [&](int64_t step) {
    nn::save_checkpoint(o.checkpoint, snapshot(*model, opt, step, run));
    progress.note("step " + std::to_string(step) + ": checkpoint saved to " + o.checkpoint);
  };

  const int64_t stop = o.until > 0 ? std::min(o.until, run.steps) : run.steps;
  double loss_value = 0;
  for (int64_t step = first; step < stop; ++step) {
    const auto start = std::chrono::steady_clock::now();
    opt.set_lr(nn::optim::warmup_cosine_lr(step, run.lr, warmup, run.steps, run.min_lr));
    const TextBatch batch = batches.next();
    opt.zero_grad();
    Tensor loss = model->loss(batch.x, batch.y);
    loss.backward();
    const double norm = nn::optim::clip_grad_norm(model->parameters(), run.grad_clip);
    opt.step();
    loss_value = loss.item<double>();
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    const double tokens_per_s = double(run.batch * seq) / seconds;
    progress.update(step, loss_value, tokens_per_s);
    record(JsonLine()
               .add("step", step + 1)
               .add_exact("loss", loss_value)
               .add("lr", opt.lr())
               .add("grad_norm", norm)
               .add("tokens_per_s", tokens_per_s)
               .add("step_ms", seconds * 1e3));
    const bool last = step + 1 == stop;
    if (o.eval_every > 0 && (step + 1) % o.eval_every == 0 && !last) evaluate(step + 1);
    if (!o.checkpoint.empty() && o.save_every > 0 && (step + 1) % o.save_every == 0 && !last)
      save(step + 1);
  }
  progress.finish();
  evaluate(stop);
  if (!o.checkpoint.empty()) save(stop);
  return loss_value;
}

}  // namespace dlf::app
