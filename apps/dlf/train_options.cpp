// The options of dlf train and dlf profile (and the schedule and ZeRO options dlf plan shares).
#include <dlf/parallel/device_arg.h>

#include "command_options.h"

#include "validators.h"

namespace dlf::app {
void add_schedule_options(CLI::App* cmd, std::string& schedule, int& virtual_stages) {
  cmd->add_option("--schedule", schedule, "pipeline schedule: 1f1b, gpipe or interleaved")
      ->check(CLI::IsMember({"1f1b", "gpipe", "interleaved"}))
      ->capture_default_str();
  cmd->add_option("--virtual-stages", virtual_stages,
                  "chunks of layers per pipeline rank (--schedule interleaved: 2 or more)")
      ->check(whole(1, parallel::kMaxRanks))
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

namespace {

void add_train_options(CLI::App* cmd, TrainOptions& o) {
  dlf::train::RunConfig& r = o.run;
  cmd->add_option("--model", r.model,
                  "model name: gpt-nano, gpt-mini, gpt-small, gpt-medium, llama-nano, llama-mini, "
                  "llama-small, bert-tiny, bert-mini, bert-base, vit-tiny, vit-small, unet-tiny, "
                  "unet-small")
      ->check(model_name())
      ->capture_default_str();
  cmd->add_option("--data", r.data,
                  "text files or folders, or a folder of token shards (dlf tokenize) (default: "
                  "/usr/share/games/fortunes)");
  cmd->add_option("--tokenizer", r.tokenizer,
                  "the tokenizer of the --data shards, a name or path as dlf tokenizer's "
                  "(default: bytes)");
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
                  "start from these weights instead of the seed's: a dlf checkpoint, a "
                  ".safetensors file or Hugging Face's shards (dlf's names or Hugging Face's: "
                  "GPT-2, LlamaForCausalLM)")
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
      ->check(whole(1, parallel::kMaxRanks));
  cmd->add_option("--dp", o.dp, "data-parallel replicas (default: devices / (tp x pp))")
      ->check(whole(1, parallel::kMaxRanks));
  cmd->add_option("--tp", o.tp, "tensor-parallel ways (Megatron-LM: heads, MLP, vocabulary)")
      ->check(whole(1, parallel::kMaxRanks));
  cmd->add_option("--pp", o.pp, "pipeline stages (blocks balanced by FLOPs)")
      ->check(whole(1, parallel::kMaxRanks));
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

}  // namespace

void add_train(CLI::App& app, TrainOptions& o, CLI::App*& cmd) {
  cmd = app.add_subcommand("train",
                           "Train a model: GPT and BERT on text (the fortunes corpus by default), "
                           "ViT and UNet on Fashion-MNIST");
  add_train_options(cmd, o);
}

// `dlf profile`: train's options for a few steps, and rank 0's ops as a table.
void add_profile(CLI::App& app, TrainOptions& o, ProfileRequest& request, CLI::App*& cmd) {
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

}  // namespace dlf::app
