// The dlf command line.
#include <CLI/CLI.hpp>

#include <iostream>
#include <string>

#include <dlf/dlf.h>
#include <dlf/parallel/mpi.h>

#include "demo.h"
#include "plan.h"
#include "sample.h"
#include "train.h"

namespace {
// CLI11's PositiveNumber prints its range as a 300-digit number; this says it plainly.
const CLI::Validator kPositive(
    [](std::string& value) -> std::string {
      try {
        if (std::stod(value) > 0) return "";
      } catch (const std::exception&) {
      }
      return "must be a positive number, got '" + value + "'";
    },
    "POSITIVE");

const CLI::Validator kModelName(
    [](std::string& value) -> std::string {
      for (const auto& name : dlf::models::model_names())
        if (name == value) return "";
      std::string known;
      for (const auto& name : dlf::models::model_names()) known += " " + name;
      return "unknown model '" + value + "' (known:" + known + ")";
    },
    "MODEL");

void add_train(CLI::App& app, dlf::app::TrainOptions& o, CLI::App*& cmd) {
  cmd = app.add_subcommand("train",
                           "Train a model: GPT and BERT on text (the fortunes corpus by default), "
                           "ViT and UNet on Fashion-MNIST");
  dlf::app::RunConfig& r = o.run;
  cmd->add_option("--model", r.model,
                  "model name: gpt-nano, gpt-mini, gpt-small, gpt-medium, bert-tiny, bert-mini, "
                  "bert-base, vit-tiny, vit-small, unet-tiny, unet-small")
      ->check(kModelName)
      ->capture_default_str();
  cmd->add_option("--data", r.data, "text files or folders (default: /usr/share/games/fortunes)");
  cmd->add_option("--steps", r.steps, "optimizer steps in total (the schedule's length)")
      ->check(kPositive)
      ->capture_default_str();
  cmd->add_option("--until", o.until, "stop after this step and checkpoint, as if interrupted")
      ->check(kPositive);
  r.batch = 0;  // the model's own unless given
  cmd->add_option("--batch", r.batch,
                  "sequences or images per step (default: 8 for GPT, 16 for BERT, 64 for ViT, 32 "
                  "for UNet)")
      ->check(kPositive);
  cmd->add_option("--seq", r.seq, "tokens per sequence (default: the model's context)")
      ->check(kPositive);
  cmd->add_option("--lr", r.lr, "peak learning rate (AdamW, warmup then cosine)")
      ->check(kPositive)
      ->capture_default_str();
  cmd->add_option("--min-lr", r.min_lr, "learning rate at the end of the cosine")
      ->capture_default_str();
  cmd->add_option("--warmup", r.warmup, "warmup steps (default: 5 % of --steps)");
  cmd->add_option("--weight-decay", r.weight_decay, "AdamW decay of matrices and embeddings")
      ->capture_default_str();
  cmd->add_option("--clip", r.grad_clip, "clip gradients to this global norm")
      ->check(kPositive)
      ->capture_default_str();
  cmd->add_option("--seed", r.seed, "seed of the initialisation and the batches")
      ->capture_default_str();
  cmd->add_option("--checkpoint", o.checkpoint, "directory for checkpoint.h5");
  cmd->add_flag("--resume", o.resume, "continue from the checkpoint in --checkpoint");
  cmd->add_option("--save-every", o.save_every, "steps between checkpoints (default: at the end)");
  cmd->add_option("--eval-every", o.eval_every,
                  "steps between validation losses (default: at the end)");
  cmd->add_option("--eval-batches", o.eval_batches,
                  "validation batches per evaluation (default: 4; ViT: the whole test set)")
      ->check(kPositive)
      ->capture_default_str();
  cmd->add_option("--metrics", o.metrics, "write per-step metrics to this file as JSON lines");
  cmd->add_option("--log-every", o.log_every, "steps between progress lines when not on a terminal")
      ->check(kPositive)
      ->capture_default_str();
  cmd->add_option("--devices", o.devices,
                  "ranks, one per device (default: dp x tp x pp, or 1); alone, the layout is "
                  "planned: the fastest predicted dp x tp x pp that fits")
      ->check(kPositive);
  cmd->add_option("--dp", o.dp, "data-parallel replicas (default: devices / (tp x pp))")
      ->check(kPositive);
  cmd->add_option("--tp", o.tp, "tensor-parallel ways (Megatron-LM: heads, MLP, vocabulary)")
      ->check(kPositive);
  cmd->add_option("--pp", o.pp, "pipeline stages (blocks balanced by FLOPs)")->check(kPositive);
  cmd->add_option("--micro-batch", o.micro_batch,
                  "sequences per micro-batch (default: 1 with a pipeline, else the replica's "
                  "share)")
      ->check(kPositive);
  cmd->add_option("--schedule", o.schedule, "pipeline schedule: 1f1b or gpipe")
      ->capture_default_str();
  cmd->add_option("--device", o.device,
                  "cpu, sim (a100-40gb), sim:PRESET (a100-40gb, a100-80gb, h100-80gb, l4-24gb) or "
                  "sim:SPEC.json; auto: cpu for one device, sim for more")
      ->capture_default_str();
  cmd->add_option("--trace", o.trace, "write a Chrome trace of the simulated devices (Perfetto)");
  cmd->add_flag("--zero", o.zero,
                "shard the optimizer state over the data-parallel ranks (ZeRO stage 1): 1/N of the "
                "state and of the update per rank");
  cmd->add_option("--bucket-mb", o.bucket_mb, "size of the gradient buckets allreduced together")
      ->check(kPositive)
      ->capture_default_str();
}

void add_generate(CLI::App& app, dlf::app::GenerateOptions& o, CLI::App*& cmd) {
  cmd = app.add_subcommand("generate",
                           "Continue a prompt with a trained GPT, or sample images from a UNet");
  cmd->add_option("--checkpoint", o.checkpoint, "directory holding checkpoint.h5")->required();
  cmd->add_option("--model", o.model, "the checkpoint's model (checked; default: whatever it is)")
      ->check(kModelName);
  cmd->add_option("--out", o.out, "UNet: the PNG file for the grid of samples");
  cmd->add_option("--samples", o.samples, "UNet: images to sample")
      ->check(kPositive)
      ->capture_default_str();
  cmd->add_option("--sampling-steps", o.sampling_steps,
                  "UNet: DDPM denoising steps (at most its 1000; fewer skip evenly)")
      ->check(kPositive)
      ->capture_default_str();
  cmd->add_option("--prompt", o.prompt, "text to continue")->capture_default_str();
  cmd->add_option("--tokens", o.tokens, "bytes to generate")
      ->check(kPositive)
      ->capture_default_str();
  cmd->add_option("--temperature", o.temperature, "sampling temperature (0: greedy)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  cmd->add_option("--top-k", o.top_k, "sample among the k likeliest (0: all)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  cmd->add_option("--seed", o.seed, "sampling seed")->capture_default_str();
}

void add_eval(CLI::App& app, dlf::app::EvalOptions& o, CLI::App*& cmd) {
  cmd = app.add_subcommand("eval", "Validation loss of a trained model");
  cmd->add_option("--checkpoint", o.checkpoint, "directory holding checkpoint.h5")->required();
  cmd->add_option("--data", o.data, "text to evaluate on (default: the run's own data)");
  cmd->add_option("--batches", o.batches, "validation batches")
      ->check(kPositive)
      ->capture_default_str();
}
void add_plan(CLI::App& app, dlf::app::PlanCommand& o, CLI::App*& cmd) {
  cmd = app.add_subcommand(
      "plan", "Per-device memory and predicted step time of a layout, planned on meta devices");
  cmd->add_option("--model", o.model, "model name, e.g. gpt-small, gpt3-175b, gpt-1t")
      ->check(kModelName)
      ->capture_default_str();
  cmd->add_option("--devices", o.devices, "devices in all")->check(kPositive)->required();
  cmd->add_option("--dp", o.dp, "data-parallel ways (default: devices / (tp x pp))")
      ->check(kPositive);
  cmd->add_option("--tp", o.tp, "tensor-parallel ways")->check(kPositive)->capture_default_str();
  cmd->add_option("--pp", o.pp, "pipeline stages")->check(kPositive)->capture_default_str();
  cmd->add_option("--device", o.device, "sim:PRESET or sim:SPEC.json")->capture_default_str();
  cmd->add_option("--batch", o.batch, "global batch in sequences (default: dp x micro-batch x 4pp)")
      ->check(kPositive);
  cmd->add_option("--micro-batch", o.micro_batch, "sequences per micro-batch")
      ->check(kPositive)
      ->capture_default_str();
  cmd->add_option("--seq", o.seq, "tokens per sequence (default: the model's context)")
      ->check(kPositive);
  cmd->add_option("--dtype", o.dtype, "f32 or bf16")->capture_default_str();
  cmd->add_option("--schedule", o.schedule, "pipeline schedule: 1f1b or gpipe")
      ->capture_default_str();
  cmd->add_flag("--json", o.json, "print one JSON line instead");
}

// One line on stderr and exit code 1; under mpirun the other processes, which may be waiting
// for this one in a collective, end with it.
int fail(const std::string& line) {
  std::cerr << line << "\n" << std::flush;
  if (dlf::parallel::launched_by_mpi()) dlf::parallel::mpi_abort(1);
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"dlf: a deep-learning framework in C++"};
  app.require_subcommand(1);
  int threads = 0;
  app.add_option("--threads", threads,
                 "CPU threads for kernels (default: DLF_NUM_THREADS or all cores)")
      ->check(kPositive);

  dlf::app::DemoOptions demo;
  CLI::App* demo_cmd = app.add_subcommand(
      "demo", "Fit a small MLP with autograd on the CPU and show its per-op cost");
  demo_cmd->add_option("--steps", demo.steps, "SGD steps")->check(kPositive);
  demo_cmd->add_option("--hidden", demo.hidden, "hidden width")->check(kPositive);
  demo_cmd->add_option("--lr", demo.lr, "learning rate")->check(kPositive);
  demo_cmd->add_option("--seed", demo.seed, "initialisation seed");

  dlf::app::TrainOptions train;
  dlf::app::GenerateOptions generate;
  dlf::app::EvalOptions eval;
  CLI::App *train_cmd = nullptr, *generate_cmd = nullptr, *eval_cmd = nullptr;
  add_train(app, train, train_cmd);
  add_generate(app, generate, generate_cmd);
  add_eval(app, eval, eval_cmd);
  dlf::app::PlanCommand plan;
  CLI::App* plan_cmd = nullptr;
  add_plan(app, plan, plan_cmd);

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e);  // --help
    std::cerr << "dlf: " << e.what() << " (see dlf --help)\n";
    return 2;
  }
  try {
    if (threads > 0) dlf::set_num_threads(threads);
    if (*demo_cmd) dlf::app::run_demo(demo);
    if (*train_cmd) {
      train.steps_given = train_cmd->count("--steps") > 0;
      dlf::app::run_train(train);
    }
    if (*generate_cmd) dlf::app::run_generate(generate);
    if (*eval_cmd) dlf::app::run_eval(eval);
    if (*plan_cmd) dlf::app::run_plan(plan);
  } catch (const dlf::Error& e) {
    return fail(std::string("dlf: ") + e.what());
  } catch (const std::bad_alloc&) {
    return fail("dlf: out of host memory (try a smaller --batch or --seq)");
  } catch (const std::exception& e) {  // a bug, but still one line and no abort
    return fail(std::string("dlf: internal error: ") + e.what());
  }
  return 0;
}
