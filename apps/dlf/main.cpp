// The dlf command line.
#include <CLI/CLI.hpp>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <sstream>
#include <string>
#include <tuple>

#include <dlf/dlf.h>
#include <dlf/parallel/mpi.h>

#include "bench_command.h"
#include "convert.h"
#include "demo.h"
#include "graph_command.h"
#include "plan.h"
#include "sample.h"
#include "tokenizer_command.h"
#include "train.h"
#include "validators.h"

namespace {

using dlf::app::kMaxBatch;
using dlf::app::kMaxPlannedDevices;
using dlf::app::kMaxRanks;
using dlf::app::kMaxSteps;
using dlf::app::model_name;
using dlf::app::non_empty;
using dlf::app::non_negative;
using dlf::app::positive;
using dlf::app::whole;

// --schedule and --virtual-stages, as dlf train and dlf plan take them.
void add_schedule_options(CLI::App* cmd, std::string& schedule, int& virtual_stages) {
  cmd->add_option("--schedule", schedule, "pipeline schedule: 1f1b, gpipe or interleaved")
      ->check(CLI::IsMember({"1f1b", "gpipe", "interleaved"}))
      ->capture_default_str();
  cmd->add_option("--virtual-stages", virtual_stages,
                  "chunks of layers per pipeline rank (--schedule interleaved: 2 or more)")
      ->check(whole(1, kMaxRanks))
      ->capture_default_str();
}

// --zero STAGE, or --zero alone for stage 1; without it, no sharding (stage 0). The value may
// be left out, so CLI11 would show the stage it stands for alone as the default: it takes the
// missing value as 0 here instead.
void add_zero_option(CLI::App* cmd, int& zero, const std::string& what) {
  cmd->add_option_function<int>(
         "--zero", [&zero](const int& stage) { zero = stage == 0 ? 1 : stage; },
         what + " (default: no sharding; --zero alone: 1)")
      ->expected(0, 1)
      ->check(CLI::Range(1, 3));
}

void add_train_options(CLI::App* cmd, dlf::app::TrainOptions& o) {
  dlf::train::RunConfig& r = o.run;
  cmd->add_option("--model", r.model,
                  "model name: gpt-nano, gpt-mini, gpt-small, gpt-medium, llama-nano, llama-mini, "
                  "llama-small, bert-tiny, bert-mini, bert-base, vit-tiny, vit-small, unet-tiny, "
                  "unet-small")
      ->check(model_name())
      ->capture_default_str();
  cmd->add_option("--data", r.data, "text files or folders (default: /usr/share/games/fortunes)");
  cmd->add_option("--steps", r.steps, "optimizer steps in total (the schedule's length)")
      ->check(whole(1, kMaxSteps))
      ->capture_default_str();
  cmd->add_option("--until", o.until, "stop after this step and checkpoint, as if interrupted")
      ->check(whole(1, kMaxSteps));
  r.batch = 0;  // the model's own unless given
  cmd->add_option("--batch", r.batch,
                  "sequences or images per step (default: 8 for GPT, 16 for BERT, 64 for ViT, 32 "
                  "for UNet)")
      ->check(whole(1, kMaxBatch));
  cmd->add_option("--seq", r.seq, "tokens per sequence (default: the model's context)")
      ->check(whole(1, kMaxBatch));
  cmd->add_option("--lr", r.lr, "peak learning rate (AdamW, warmup then cosine)")
      ->check(positive())
      ->capture_default_str();
  cmd->add_option("--min-lr", r.min_lr,
                  "learning rate at the end of the cosine (at most --lr; ViT: 0)")
      ->check(non_negative())
      ->capture_default_str();
  cmd->add_option("--warmup", r.warmup, "warmup steps (default: 5 % of --steps; ViT: 100)")
      ->check(whole(1, kMaxSteps));
  cmd->add_option("--weight-decay", r.weight_decay,
                  "AdamW decay of matrices and embeddings (ViT: 0.05)")
      ->check(non_negative())
      ->capture_default_str();
  cmd->add_option("--clip", r.grad_clip, "clip gradients to this global norm")
      ->check(positive())
      ->capture_default_str();
  cmd->add_option("--seed", r.seed, "seed of the initialisation and the batches")
      ->check(non_empty())
      ->capture_default_str();
  cmd->add_option("--checkpoint", o.checkpoint, "directory for checkpoint.h5")->check(non_empty());
  CLI::Option* resume =
      cmd->add_flag("--resume", o.resume, "continue from the checkpoint in --checkpoint");
  cmd->add_flag("--overwrite", o.overwrite,
                "start a new run over the checkpoint in --checkpoint (replaced at the first save)")
      ->excludes(resume);
  cmd->add_option("--init-from", o.init_from,
                  "start from these weights instead of the seed's: a dlf checkpoint or a "
                  ".safetensors file (GPT: dlf's or Hugging Face GPT-2's names)")
      ->excludes(resume)
      ->check(non_empty());
  cmd->add_option("--save-every", o.save_every, "steps between checkpoints (default: at the end)")
      ->check(whole(1, kMaxSteps));
  cmd->add_option("--eval-every", o.eval_every,
                  "steps between validation losses (default: at the end)")
      ->check(whole(1, kMaxSteps));
  cmd->add_option("--eval-batches", o.eval_batches,
                  "validation batches per evaluation (default: 4; ViT: the whole test set)")
      ->check(whole(1, kMaxSteps));
  cmd->add_option("--metrics", o.metrics, "write per-step metrics to this file as JSON lines");
  cmd->add_option("--log-every", o.log_every, "steps between progress lines when not on a terminal")
      ->check(whole(1, kMaxSteps))
      ->capture_default_str();
  cmd->add_option("--devices", o.devices,
                  "ranks, one per device (default: dp x tp x pp, or 1); alone, the layout is "
                  "planned: the fastest predicted dp x tp x pp that fits")
      ->check(whole(1, kMaxRanks));
  cmd->add_option("--dp", o.dp, "data-parallel replicas (default: devices / (tp x pp))")
      ->check(whole(1, kMaxRanks));
  cmd->add_option("--tp", o.tp, "tensor-parallel ways (Megatron-LM: heads, MLP, vocabulary)")
      ->check(whole(1, kMaxRanks));
  cmd->add_option("--pp", o.pp, "pipeline stages (blocks balanced by FLOPs)")
      ->check(whole(1, kMaxRanks));
  cmd->add_option("--micro-batch", o.micro_batch,
                  "sequences per micro-batch (default: 1 with a pipeline, else the replica's "
                  "share)")
      ->check(whole(1, kMaxBatch));
  add_schedule_options(cmd, o.schedule, o.virtual_stages);
  cmd->add_option("--device", o.device,
                  "cpu, sim (a100-40gb), sim:PRESET (a100-40gb, a100-80gb, h100-80gb, l4-24gb) or "
                  "sim:SPEC.json; auto: cpu for one device, sim for more")
      ->capture_default_str();
  cmd->add_option("--trace", o.trace,
                  "write a Chrome trace (Perfetto): steps, ops with shapes, FLOPs and bytes, "
                  "collectives and memory, per rank; the sim clock on sim devices, the wall clock "
                  "on the cpu");
  cmd->add_option("--report", o.report,
                  "write one self-contained HTML file at the end: loss and throughput curves, the "
                  "memory of a step by category over time, its op table, the layout");
  add_zero_option(cmd, o.zero,
                  "ZeRO stage over the data-parallel ranks: 1 shards the optimizer state and the "
                  "update (1/N per rank), 2 the gradients too, 3 the parameters too (each "
                  "block's gathered while it runs)");
  cmd->add_option("--offload", o.offload,
                  "none; optimizer: keep the optimizer state and a master copy of the "
                  "parameters in host memory and run the update there (ZeRO-Offload): each step "
                  "the gradients go down and the parameters come up over the device's host link; "
                  "params (with --zero 3): ZeRO-3's parameter shards too, uploaded for each gather")
      ->check(CLI::IsMember({"none", "optimizer", "params"}))
      ->capture_default_str();
  cmd->add_flag("--compile", o.compile,
                "graph mode: capture the step (forward, backward, clipping, AdamW) at the first "
                "step, optimise the graph, plan its memory in one arena and replay it at every "
                "later step; any layout (its collectives are ops of the graph), ZeRO-1, -2 and "
                "-3 with the sharded update in the graph (ZeRO-3's gathered parameters planned "
                "in its arena), but not --zero 2 or 3 with --offload");
  cmd->add_option("--recompute", o.recompute,
                  "activation recompute: none; full (each block keeps only its input for "
                  "backward and runs again there: least memory, a third more compute); or "
                  "selective (each block keeps its input and the outputs of its matmuls, "
                  "convolutions and attention, and runs again only the cheap ops between them)")
      ->check(CLI::IsMember({"none", "full", "selective"}))
      ->capture_default_str();
  cmd->add_option("--precision", o.precision,
                  "fp32, or bf16: matmuls, convolutions and attention compute in bf16 with f32 "
                  "accumulation (dlf::AutocastGuard); master weights, optimizer state, "
                  "normalisation statistics, softmax and losses stay f32")
      ->check(CLI::IsMember({"fp32", "bf16"}))
      ->capture_default_str();
  cmd->add_option("--grad-reduce", o.grad_reduce,
                  "the dtype the data-parallel gradient average crosses the wire in: fp32, or "
                  "bf16 (half the bytes, the average rounded to bf16 once; PyTorch's "
                  "bf16_compress_hook)")
      ->check(CLI::IsMember({"fp32", "bf16"}))
      ->capture_default_str();
  cmd->add_option("--bucket-mb", o.bucket_mb, "size of the gradient buckets allreduced together")
      ->check(whole(1, 1 << 20))
      ->capture_default_str();
  cmd->add_flag("--detect-anomaly", o.detect_anomaly,
                "check every op's output, forward and backward, and name the first that makes NaN "
                "or infinity (slow: for debugging)");
  cmd->add_option("--check-replicas", o.check_replicas,
                  "every N steps, compare a checksum of the data-parallel replicas' parameters "
                  "and stop if they drifted apart")
      ->check(whole(1, kMaxSteps));
}

void add_train(CLI::App& app, dlf::app::TrainOptions& o, CLI::App*& cmd) {
  cmd = app.add_subcommand("train",
                           "Train a model: GPT and BERT on text (the fortunes corpus by default), "
                           "ViT and UNet on Fashion-MNIST");
  add_train_options(cmd, o);
}

// `dlf profile`: train's options for a few steps, and rank 0's ops as a table.
void add_profile(CLI::App& app, dlf::app::TrainOptions& o, dlf::app::ProfileRequest& request,
                 CLI::App*& cmd) {
  cmd = app.add_subcommand(
      "profile",
      "Train a few steps (every option of train) and print rank 0's ops as a table: calls, self "
      "and total time, share, FLOPs, GFLOP/s, GB/s and the roofline bound (against the sim "
      "device's peaks, or this CPU's measured ones); then the step's time in and outside ops, "
      "exposed communication and MFU; with --memory, what uses the memory at its peak");
  o.run.steps = 4;
  add_train_options(cmd, o);
  cmd->add_option("--skip", request.skip, "steps run before profiling starts (warm-up)")
      ->check(whole(0, kMaxSteps))
      ->capture_default_str();
  cmd->add_flag("--by-shape", request.by_shape, "one row per op and input shapes");
  cmd->add_flag("--memory", request.memory,
                "also rank 0's memory at its peak: the live tensors by the op that made them, "
                "their category and the block (or backward) they were made in; and the live "
                "bytes by category over the ops (with --trace, a counter track per category)");
  cmd->add_option("--compare", request.compare,
                  "sim:PRESET or sim:SPEC.json (dlf calibrate writes this CPU's): the time such "
                  "a device predicts for each op beside the measured time, by op class (matmul, "
                  "attention and its backward, conv, normalisation, element-wise, optimizer) and "
                  "per step, with "
                  "the error (runs on the cpu device)");
}

void add_calibrate(CLI::App& app, std::string& out, CLI::App*& cmd) {
  cmd = app.add_subcommand("calibrate",
                           "Measure this CPU as the simulator describes a device (matmul peak per "
                           "precision, memory bandwidth, per-op overhead, each op class's share "
                           "of the peaks; about ten seconds) and write its JSON spec, for "
                           "--device sim:FILE.json");
  cmd->add_option("--out", out, "the spec file (default: standard output)");
}

void add_generate(CLI::App& app, dlf::app::GenerateOptions& o, CLI::App*& cmd) {
  cmd =
      app.add_subcommand("generate",
                         "Use a trained model: a GPT continues --prompt, a BERT fills its [MASK]s, "
                         "a UNet samples images");
  CLI::Option_group* source = cmd->add_option_group("model", "the model: one of");
  source->add_option("--checkpoint", o.checkpoint, "directory holding checkpoint.h5");
  source->add_option("--weights", o.weights,
                     "a weights file: .safetensors (dlf's names, or GPT-2's for a GPT) or a "
                     "checkpoint.h5");
  source->require_option(1);
  cmd->add_option("--model", o.model,
                  "the model of the weights (checked; needed for a file that does not say)")
      ->check(model_name());
  cmd->add_option("--out", o.out, "UNet: the PNG file for the grid of samples");
  cmd->add_option("--samples", o.samples, "UNet: images to sample")
      ->check(whole(1, 4096))
      ->capture_default_str();
  cmd->add_option("--sampling-steps", o.sampling_steps,
                  "UNet: DDPM denoising steps (at most its 1000; fewer skip evenly)")
      ->check(whole(1, 1000))
      ->capture_default_str();
  cmd->add_option("--prompt", o.prompts,
                  "GPT: text to continue; again for more prompts, generated in one batch "
                  "(default: a newline); BERT: text with [MASK]s to fill")
      ->allow_extra_args(false);
  cmd->add_option("--tokenizer", o.tokenizer,
                  "GPT: the tokenizer of its vocabulary, a name (gpt2, cl100k_base, "
                  "o200k_base) or a path (default: bytes, or token ids for a vocabulary past "
                  "them, as gpt-small's)");
  cmd->add_option("--max-tokens,--tokens", o.max_tokens,
                  "GPT: new tokens per prompt at most (bytes without --tokenizer); fewer at "
                  "--stop or the tokenizer's end of text")
      ->check(whole(1, 1 << 24))
      ->capture_default_str();
  cmd->add_option("--stop", o.stops,
                  "GPT: a prompt's continuation ends before this text (again for more)")
      ->allow_extra_args(false)
      ->check(non_empty());
  cmd->add_flag("--no-cache", o.no_cache,
                "GPT: recompute the whole prefix for every token (no key/value cache)");
  cmd->add_option("--temperature", o.temperature, "sampling temperature (0: greedy)")
      ->check(non_negative())
      ->capture_default_str();
  cmd->add_option("--top-k", o.top_k, "sample among the k likeliest (0: all)")
      ->check(whole(0, 1 << 24))
      ->capture_default_str();
  cmd->add_option("--top-p", o.top_p,
                  "then among the fewest likeliest whose probabilities add up to p (1: all)")
      ->check(CLI::Range(0.0, 1.0))
      ->capture_default_str();
  cmd->add_option("--seed", o.seed, "sampling seed")->check(non_empty())->capture_default_str();
}

void add_convert(CLI::App& app, dlf::app::ConvertOptions& o, CLI::App*& cmd) {
  cmd = app.add_subcommand("convert",
                           "Convert weights between a dlf checkpoint and a .safetensors file "
                           "(PyTorch's and Hugging Face's format)");
  cmd->add_option("in", o.in, "a checkpoint directory, a checkpoint.h5 or a .safetensors file")
      ->required();
  cmd->add_option("out", o.out, "the same kinds: a .safetensors file, else a checkpoint directory")
      ->required();
  cmd->add_option("--names", o.names,
                  "GPT's names in a .safetensors OUT: nanogpt (dlf's) or hf (Hugging Face GPT-2: "
                  "no transformer. prefix, Conv1D weights transposed); GPT-2 input is recognised")
      ->check(CLI::IsMember({"nanogpt", "hf"}))
      ->capture_default_str();
  cmd->add_option("--model", o.model, "the model IN holds (checked; needed when IN does not say)")
      ->check(model_name());
  cmd->add_flag("--overwrite", o.overwrite, "replace the weights OUT holds already");
}

void add_eval(CLI::App& app, dlf::app::EvalOptions& o, CLI::App*& cmd) {
  cmd = app.add_subcommand("eval",
                           "Score a trained model on held-out data: loss, and the family's metric");
  cmd->add_option("--checkpoint", o.checkpoint, "directory holding checkpoint.h5")->required();
  cmd->add_option("--data", o.data, "text to evaluate on (default: the run's own data)");
  cmd->add_option("--batches", o.batches,
                  "validation batches (default: 16; ViT: the whole test set)")
      ->check(whole(1, kMaxSteps))
      ->capture_default_str();
}
void add_plan(CLI::App& app, dlf::app::PlanCommand& o, CLI::App*& cmd) {
  cmd = app.add_subcommand(
      "plan", "Per-device memory and predicted step time of a layout, planned on meta devices");
  CLI::Option* model =
      cmd->add_option("--model", o.model,
                      "model name, e.g. gpt-small, gpt3-175b, llama2-7b, bert-base, vit-small, "
                      "unet-small")
          ->check(model_name())
          ->capture_default_str();
  for (auto [flag, value, what] :
       {std::tuple{"--layers", &o.layers, "a GPT by its dimensions instead of --model: blocks"},
        std::tuple{"--hidden", &o.hidden, "... its width (d_model)"},
        std::tuple{"--heads", &o.heads, "... its attention heads (dividing --hidden)"},
        std::tuple{"--vocab", &o.vocab, "... its vocabulary (default 50257; --seq: 2048)"}})
    cmd->add_option(flag, *value, what)->check(whole(1, int64_t(1) << 24))->excludes(model);
  cmd->add_option("--devices", o.devices, "devices in all")
      ->check(whole(1, kMaxPlannedDevices))
      ->required();
  cmd->add_option("--dp", o.dp, "data-parallel ways (default: devices / (tp x pp))")
      ->check(whole(1, kMaxPlannedDevices));
  cmd->add_option("--tp", o.tp, "tensor-parallel ways")
      ->check(whole(1, kMaxPlannedDevices))
      ->capture_default_str();
  cmd->add_option("--pp", o.pp, "pipeline stages")
      ->check(whole(1, kMaxPlannedDevices))
      ->capture_default_str();
  cmd->add_option("--device", o.device, "sim:PRESET or sim:SPEC.json")->capture_default_str();
  cmd->add_option("--batch", o.batch,
                  "global batch in sequences or images (default: dlf train's for the model)")
      ->check(whole(1, int64_t(1) << 40));
  cmd->add_option("--micro-batch", o.micro_batch,
                  "GPT: sequences per micro-batch (default as dlf train's: 1 with a pipeline, "
                  "else a replica's rows at once)")
      ->check(whole(1, kMaxBatch));
  cmd->add_option("--seq", o.seq, "tokens per sequence (default: the model's context)")
      ->check(whole(1, kMaxBatch));
  cmd->add_option("--precision,--dtype", o.precision,
                  "fp32, or bf16 mixed precision as dlf train --precision bf16 runs it (f32 "
                  "master weights and optimizer state)")
      ->check(CLI::IsMember({"fp32", "bf16"}))
      ->capture_default_str();
  add_schedule_options(cmd, o.schedule, o.virtual_stages);
  cmd->add_option("--recompute", o.recompute,
                  "activation recompute: none, full (every block keeps its input) or selective "
                  "(and the outputs of its matmuls, convolutions and attention)")
      ->check(CLI::IsMember({"none", "full", "selective"}))
      ->capture_default_str();
  add_zero_option(cmd, o.zero, "ZeRO stage over the data-parallel ranks: 1, 2 or 3");
  cmd->add_option("--offload", o.offload,
                  "none; optimizer: the optimizer state and update in host memory (ZeRO-Offload; "
                  "the copies over the host link are priced into the step); params (with --zero "
                  "3): ZeRO-3's parameter shards too")
      ->check(CLI::IsMember({"none", "optimizer", "params"}))
      ->capture_default_str();
  cmd->add_flag("--compile", o.compile,
                "graph mode: capture the training step (forward, backward, clipping, AdamW) on "
                "a meta device as dlf train --compile runs it, on one device or as one of --dp "
                "replicas (DDP, or --zero 1, 2 or 3), a GPT (by --model or its dimensions) as one "
                "rank of its --tp x --pp mesh (every stage planned, the largest reported), a "
                "BERT or ViT as tp rank 0's shard over --tp, and report its memory plan per device "
                "(parameters, optimizer state, batch and the planned arena); a replica's batch is "
                "--batch split over the replicas, a GPT's taken in micro-batches as dlf train "
                "takes them");
  cmd->add_flag("--json", o.json, "print one JSON line instead");
}

void add_graph(CLI::App& app, dlf::app::GraphCommand& o, CLI::App*& cmd) {
  cmd = app.add_subcommand("graph",
                           "Capture one training step of a model as a graph, optimise it and plan "
                           "its memory; print node counts per pass, its ops and its arena, and "
                           "write it as DOT or JSON");
  cmd->add_option("--model", o.model, "model name")->check(model_name())->capture_default_str();
  cmd->add_option("--batch", o.batch, "sequences or images (default: the benchmarks')")
      ->check(whole(1, kMaxBatch));
  cmd->add_option("--seq", o.seq, "tokens per sequence (default: the benchmarks')")
      ->check(whole(1, kMaxBatch));
  cmd->add_option("--device", o.device, "cpu, meta:PRESET (shapes only) or sim:PRESET")
      ->capture_default_str();
  cmd->add_option("--precision", o.precision, "fp32 or bf16 (autocast)")
      ->check(CLI::IsMember({"fp32", "bf16"}))
      ->capture_default_str();
  cmd->add_option("--dot", o.dot, "write the graph as Graphviz DOT to this file");
  cmd->add_option("--json", o.json, "save the graph (JSON, and its external bytes beside it)");
  cmd->add_option("--skip-pass", o.skip_passes,
                  "leave this pass of the optimiser out (repeatable): what it brings");
}

// One line on stderr and exit code 1; under mpirun the other processes, which may be waiting
// for this one in a collective, end with it.
int fail(const std::string& line) {
  std::cerr << line << "\n" << std::flush;
  if (dlf::parallel::launched_by_mpi()) dlf::parallel::mpi_abort(1);
  return 1;
}

// A command's output is part of its result: one that could not be written (a full disk, a
// closed pipe) is a failure, not a success.
int check_output_written(int code) {
  std::cout.flush();
  if (std::fflush(stdout) != 0 || std::ferror(stdout) || !std::cout) {
    const int error = errno;
    std::cerr << "dlf: writing the output failed (" << std::strerror(error) << ")\n";
    return code == 0 ? 1 : code;
  }
  if (std::fflush(stderr) != 0 || std::ferror(stderr)) return code == 0 ? 1 : code;
  return code;
}

// Edit distance (insertions, deletions, substitutions) of two words.
size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = above;
    }
  }
  return row[b.size()];
}

// The candidate closest to `word` by edit distance, if close enough to be a typo; else "".
std::string closest(const std::string& word, const std::vector<std::string>& candidates) {
  std::string best;
  size_t best_distance = std::max<size_t>(2, word.size() / 4) + 1;
  for (const std::string& c : candidates) {
    const size_t d = edit_distance(word, c);
    if (d < best_distance) best_distance = d, best = c;
  }
  return best;
}

// The options a command line may give to `command` (null: none was named): its own and the
// global ones.
std::vector<std::string> option_names(const CLI::App& app, const CLI::App* command) {
  std::vector<std::string> names;
  for (const CLI::App* a : {&app, command}) {
    if (a == nullptr) continue;
    for (const CLI::Option* option : a->get_options()) {
      for (const std::string& name : option->get_lnames()) names.push_back("--" + name);
    }
  }
  return names;
}

// The command a command line named, or null.
const CLI::App* named_command(const CLI::App& app) {
  const std::vector<const CLI::App*> named =
      app.get_subcommands([](const CLI::App* sub) { return sub->parsed(); });
  return named.empty() ? nullptr : named.front();
}

// One line for a command line CLI11 refused: an unknown command gets the command it is closest
// to, an unknown option the option of that command.
std::string explain(const CLI::App& app, const CLI::ParseError& e) {
  const CLI::App* command = named_command(app);
  if (command == nullptr) {
    std::vector<std::string> commands;
    for (const CLI::App* sub : app.get_subcommands([](const CLI::App*) { return true; }))
      commands.push_back(sub->get_name());
    for (const std::string& word : app.remaining()) {
      if (word.starts_with("-")) continue;
      const std::string best = closest(word, commands);
      return "unknown command " + word + (best.empty() ? "" : " (did you mean " + best + "?)");
    }
  }
  const std::string line = e.what();
  if (dynamic_cast<const CLI::ExtrasError*>(&e) == nullptr) return line;
  std::istringstream words(line.substr(line.find(':') + 1));
  for (std::string word; words >> word;) {
    if (!word.starts_with("-")) continue;
    const std::string option = word.substr(0, word.find('='));
    const std::string best = closest(option, option_names(app, command));
    return "unknown option " + option + " of dlf" + (command ? " " + command->get_name() : "") +
           (best.empty() ? "" : " (did you mean " + best + "?)");
  }
  return line;
}

int run(int argc, char** argv) {
  CLI::App app{"dlf: a deep-learning framework in C++"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "dlf " DLF_VERSION);
  int threads = 0;
  app.add_option("--threads", threads,
                 "CPU threads for kernels (default: DLF_NUM_THREADS or all cores)")
      ->check(whole(1, dlf::kMaxThreads));
  double collective_timeout = 0;
  app.add_option("--collective-timeout", collective_timeout,
                 "seconds a rank waits for its peers in a collective before giving up with an "
                 "error naming the missing ranks (default: DLF_COLLECTIVE_TIMEOUT or 600)")
      ->check(positive() & CLI::Range(0.0, 1e6));

  dlf::app::DemoOptions demo;
  CLI::App* demo_cmd = app.add_subcommand(
      "demo", "Fit a small MLP with autograd on the CPU and show its per-op cost");
  demo_cmd->add_option("--steps", demo.steps, "SGD steps")->check(whole(1, 10'000'000));
  demo_cmd->add_option("--hidden", demo.hidden, "hidden width")->check(whole(1, 1 << 16));
  demo_cmd->add_option("--lr", demo.lr, "learning rate")->check(positive());
  demo_cmd->add_option("--seed", demo.seed, "initialisation seed")->check(non_empty());

  dlf::app::TrainOptions train;
  dlf::app::GenerateOptions generate;
  dlf::app::EvalOptions eval;
  CLI::App *train_cmd = nullptr, *generate_cmd = nullptr, *eval_cmd = nullptr;
  add_train(app, train, train_cmd);
  dlf::app::TrainOptions profile;
  dlf::app::ProfileRequest profile_request;
  CLI::App* profile_cmd = nullptr;
  add_profile(app, profile, profile_request, profile_cmd);
  std::string calibrate_out;
  CLI::App* calibrate_cmd = nullptr;
  add_calibrate(app, calibrate_out, calibrate_cmd);
  add_generate(app, generate, generate_cmd);
  add_eval(app, eval, eval_cmd);
  dlf::app::PlanCommand plan;
  CLI::App* plan_cmd = nullptr;
  add_plan(app, plan, plan_cmd);
  dlf::app::ConvertOptions convert;
  CLI::App* convert_cmd = nullptr;
  add_convert(app, convert, convert_cmd);
  dlf::app::GraphCommand graph;
  CLI::App* graph_cmd = nullptr;
  add_graph(app, graph, graph_cmd);
  dlf::app::TokenizerCommand tokenizer;
  CLI::App* tokenizer_cmd = dlf::app::add_tokenizer(app, tokenizer);

  dlf::app::BenchCommand bench;
  CLI::App* bench_cmd = dlf::app::add_bench(app, bench);

  CLI::App* help_cmd = app.add_subcommand("help", "Show the commands, or one command's options");
  std::string help_topic;
  help_cmd->add_option("command", help_topic, "the command to explain");
  // Global options (--threads) are taken after the command's name too.
  for (CLI::App* sub : app.get_subcommands([](const CLI::App*) { return true; }))
    sub->fallthrough();

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e);  // --help, --version
    const CLI::App* command = named_command(app);
    std::cerr << "dlf: " << explain(app, e) << " (see dlf "
              << (command ? "help " + command->get_name() : "--help") << ")\n";
    return 2;
  }
  if (*help_cmd) {
    if (help_topic.empty()) {
      std::cout << app.get_formatter()->make_help(&app, "dlf", CLI::AppFormatMode::Normal);
    } else {
      const CLI::App* topic = nullptr;
      try {
        topic = app.get_subcommand(help_topic);
      } catch (const CLI::OptionNotFound&) {
        std::cerr << "dlf: help: no command '" << help_topic << "' (see dlf help)\n";
        return 2;
      }
      std::cout << topic->get_formatter()->make_help(topic, "dlf " + help_topic,
                                                     CLI::AppFormatMode::Normal);
    }
    return 0;
  }
  try {
    if (threads > 0) dlf::set_num_threads(threads);
    if (collective_timeout > 0) dlf::parallel::set_collective_timeout(collective_timeout);
    if (*demo_cmd) dlf::app::run_demo(demo);
    auto given = [](const CLI::App* cmd, dlf::app::TrainOptions& o) {
      for (const CLI::Option* option : cmd->get_options()) {
        if (option->count() > 0) o.given.insert(option->get_name());
      }
    };
    if (*train_cmd) {
      given(train_cmd, train);
      dlf::app::run_train(train);
    }
    if (*profile_cmd) {
      given(profile_cmd, profile);
      profile.profile = profile_request;
      dlf::app::run_train(profile);
    }
    if (*calibrate_cmd) dlf::app::run_calibrate(calibrate_out);
    if (*generate_cmd) dlf::app::run_generate(generate);
    if (*eval_cmd) dlf::app::run_eval(eval);
    if (*plan_cmd) dlf::app::run_plan(plan);
    if (*convert_cmd) dlf::app::run_convert(convert);
    if (*graph_cmd) dlf::app::run_graph(graph);
    if (*tokenizer_cmd) dlf::app::run_tokenizer(tokenizer);
    if (*bench_cmd) return dlf::app::run_bench(bench);  // its own exit codes (check: 1, 2)
  } catch (const dlf::app::Interrupted& e) {
    std::cerr << "dlf: " << e.what() << "\n";
    return 128 + e.signal();
  } catch (const dlf::Error& e) {
    return fail(std::string("dlf: ") + e.what());
  } catch (const std::bad_alloc&) {
    return fail("dlf: out of host memory (try a smaller --batch or --seq)");
  } catch (const std::exception& e) {  // a bug, but still one line and no abort
    return fail(std::string("dlf: internal error: ") + e.what());
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  // Writes to a closed pipe or past `ulimit -f` fail with an error we report, instead of
  // killing the process.
  std::signal(SIGPIPE, SIG_IGN);
  std::signal(SIGXFSZ, SIG_IGN);
  return check_output_written(run(argc, argv));
}
