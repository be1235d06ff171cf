// A zoo model (or a GPT by its configuration) with a random batch of the shape its benchmarks
// use: what train_bench, compile_bench, `dlf graph` and `dlf plan --compile` run.
#pragma once
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <dlf/models/gpt.h>
#include <dlf/nn/linear.h>
#include <dlf/nn/module.h>

namespace dlf::models {

/// One model on one batch.
struct ExampleStep {
  std::shared_ptr<nn::Module> model;  ///< the model
  /// The batch: tokens and targets (GPT), masked tokens and labels (BERT), images and labels
  /// (ViT), clean images, noise and timesteps (UNet).
  std::vector<Tensor> batch;
  /// The model's training loss on a batch of that form.
  std::function<Tensor(const std::vector<Tensor>& batch)> loss;
  int64_t batch_size = 0;  ///< sequences or images
  int64_t seq = 0;         ///< tokens a sequence, patches + 1 (ViT), pixels (UNet)
  int64_t items = 0;       ///< tokens or images in a batch
  std::string unit;        ///< "tok/s" or "img/s"
};

/// `name` from the zoo on the peer's batch (shared/peer/README.md) unless `batch` or `seq` (0:
/// the default) say otherwise: GPT 8 x 256 tokens (gpt-small 4 x 256), BERT 16 x 128 with 15 %
/// masked, ViT 64 images, UNet 32. The model is built on the default device with the current
/// default generator; the batch is drawn from `data`. `linears` makes a BERT's or ViT's Linear
/// layers (parallel::megatron_linears: one tensor-parallel rank's shard); empty: whole ones.
ExampleStep example_step(const std::string& name, int64_t batch, int64_t seq, Generator& data,
                         const nn::LinearMaker& linears = {});
/// The GPT `config` describes (a zoo one or one by its dimensions), as example_step() builds a
/// zoo GPT: batch 8 (4 above a vocabulary of 256) x min(context, 256) tokens by default.
ExampleStep gpt_example_step(const GPTConfig& config, int64_t batch, int64_t seq, Generator& data);

}  // namespace dlf::models
