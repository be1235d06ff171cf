// The options of dlf calibrate, generate, convert, eval, plan and graph.
#include "command_options.h"

#include <dlf/device/sim_system.h>

#include "validators.h"

namespace dlf::app {

void add_calibrate(CLI::App& app, std::string& out, CLI::App*& cmd) {
  cmd = app.add_subcommand("calibrate",
                           "Measure this CPU as the simulator describes a device (matmul peak per "
                           "precision, memory bandwidth, per-op overhead, each op class's share "
                           "of the peaks; about ten seconds) and write its JSON spec, for "
                           "--device sim:FILE.json");
  cmd->add_option("--out", out, "the spec file (default: standard output)");
}

void add_generate(CLI::App& app, GenerateOptions& o, CLI::App*& cmd) {
  cmd = app.add_subcommand(
      "generate",
      "Use a trained model: a GPT or Llama continues --prompt, a BERT fills its [MASK]s, "
      "a UNet samples images");
  CLI::Option_group* source = cmd->add_option_group("model", "the model: one of");
  source->add_option("--checkpoint", o.checkpoint, "directory holding checkpoint.h5");
  source->add_option("--weights", o.weights,
                     "weights: a .safetensors file, Hugging Face's shards (their directory or "
                     "model.safetensors.index.json) or a checkpoint.h5; dlf's names or Hugging "
                     "Face's (GPT-2, LlamaForCausalLM)");
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
                  "o200k_base) or a path (default: the checkpoint's, else bytes, or token ids "
                  "for a vocabulary past them, as gpt-small's)");
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

void add_convert(CLI::App& app, ConvertOptions& o, CLI::App*& cmd) {
  cmd = app.add_subcommand("convert",
                           "Convert weights between a dlf checkpoint and a .safetensors file "
                           "(PyTorch's and Hugging Face's format)");
  cmd->add_option("in", o.in,
                  "a checkpoint directory, a checkpoint.h5, a .safetensors file, or Hugging Face "
                  "shards (model.safetensors.index.json or its directory)")
      ->required();
  cmd->add_option("out", o.out,
                  "the same kinds: a .safetensors file, a directory of shards with "
                  "--max-shard-size, else a checkpoint directory")
      ->required();
  cmd->add_option(
         "--names", o.names,
         "names in a safetensors OUT: dlf (nanogpt: the same) or hf, Hugging Face's layout "
         "of the family (GPT-2: no transformer. prefix, Conv1D weights transposed, no "
         "lm_head; LlamaForCausalLM: dlf's own names, q/k rows for rotate-half rotary); "
         "Hugging Face input is recognised")
      ->check(CLI::IsMember({"dlf", "nanogpt", "hf"}))
      ->capture_default_str();
  cmd->add_option("--max-shard-size", o.max_shard_bytes,
                  "write OUT as a directory of shards, model-00001-of-0000N.safetensors of at "
                  "most this much tensor data each (2GB, 500MB, 5GiB), and "
                  "model.safetensors.index.json, as Hugging Face's save_pretrained does")
      ->transform(byte_size());
  cmd->add_option("--model", o.model, "the model IN holds (checked; needed when IN does not say)")
      ->check(model_name());
  cmd->add_flag("--overwrite", o.overwrite, "replace the weights OUT holds already");
}

void add_eval(CLI::App& app, EvalOptions& o, CLI::App*& cmd) {
  cmd = app.add_subcommand("eval",
                           "Score a trained model on held-out data: loss, and the family's metric");
  cmd->add_option("--checkpoint", o.checkpoint, "directory holding checkpoint.h5")->required();
  cmd->add_option("--data", o.data, "text to evaluate on (default: the run's own data)");
  cmd->add_option("--batches", o.batches,
                  "validation batches (default: 16; ViT: the whole test set)")
      ->check(whole(1, kMaxSteps))
      ->capture_default_str();
}
void add_plan(CLI::App& app, PlanCommand& o, CLI::App*& cmd) {
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
  CLI::Option_group* machine = cmd->add_option_group("devices", "the devices: one of");
  machine->add_option("--devices", o.devices, "devices in all")
      ->check(whole(1, kMaxPlannedDevices));
  CLI::Option* system = machine->add_option(
      "--system", o.system, "a machine by name, with --nodes: " + sim_system_names());
  machine->require_option(1);
  CLI::Option* nodes = cmd->add_option("--nodes", o.nodes, "how many of --system's nodes")
                           ->check(whole(1, 1 << 16))
                           ->needs(system);
  system->needs(nodes);
  cmd->add_option("--dp", o.dp, "data-parallel ways (default: devices / (tp x pp))")
      ->check(whole(1, kMaxPlannedDevices));
  cmd->add_option("--tp", o.tp, "tensor-parallel ways")
      ->check(whole(1, kMaxPlannedDevices))
      ->capture_default_str();
  cmd->add_option("--pp", o.pp, "pipeline stages")
      ->check(whole(1, kMaxPlannedDevices))
      ->capture_default_str();
  cmd->add_option("--device", o.device, "sim:PRESET or sim:SPEC.json")
      ->capture_default_str()
      ->excludes(system);
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

void add_graph(CLI::App& app, GraphCommand& o, CLI::App*& cmd) {
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

}  // namespace dlf::app
