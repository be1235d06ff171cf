#include <dlf/autograd/grad_mode.h>
#include <dlf/core/factory.h>
#include <dlf/core/ops/join.h>
#include <dlf/core/ops/nn_ops.h>
#include <dlf/models/gpt.h>
#include <dlf/nn/init.h>

#include <cmath>

#include "models/sampling.h"

namespace dlf::models {
namespace {

// lm_head holds the token embedding under its own name (weight tying, as nanoGPT).
struct TiedHead : nn::Module {
  explicit TiedHead(const Tensor& weight) { register_parameter("weight", weight); }
};

}  // namespace

nn::TransformerOptions gpt_block_options(const GPTConfig& c) {
  return {.dim = c.dim,
          .heads = c.heads,
          .mlp_hidden = 4 * c.dim,
          .causal = true,
          .activation = Activation::gelu_tanh,
          .ln_eps = 1e-5,
          .dropout = c.dropout,
          .dtype = c.dtype};
}

GPTTransformer::GPTTransformer(const GPTConfig& c)
    : wte(register_module("wte", std::make_shared<nn::Embedding>(c.vocab, c.dim, c.dtype))),
      wpe(register_module("wpe", std::make_shared<nn::Embedding>(c.context, c.dim, c.dtype))),
      drop(register_module("drop", std::make_shared<nn::Dropout>(c.dropout))),
      h(register_module("h", std::make_shared<nn::ModuleList<nn::TransformerBlock>>())),
      ln_f(register_module("ln_f", std::make_shared<nn::LayerNorm>(c.dim, 1e-5, true, c.dtype))) {
  for (int64_t i = 0; i < c.layers; ++i)
    h->push_back(std::make_shared<nn::TransformerBlock>(gpt_block_options(c)));
}

GPT::GPT(GPTConfig config, Generator* gen) : config_(std::move(config)) {
  const GPTConfig& c = config_;
  DLF_CHECK(c.vocab > 0 && c.context > 0 && c.layers > 0 && c.heads > 0 && c.dim % c.heads == 0,
            "GPT '", c.name, "': bad config (vocab ", c.vocab, ", context ", c.context, ", layers ",
            c.layers, ", heads ", c.heads, ", dim ", c.dim, ")");
  transformer = register_module("transformer", std::make_shared<GPTTransformer>(c));
  register_module("lm_head", std::make_shared<TiedHead>(transformer->wte->weight));
  const double residual_std = 0.02 / std::sqrt(2.0 * double(c.layers));
  for (const auto& [name, p] : named_parameters()) {
    if (p.dim() < 2) {
      if (name.ends_with(".bias")) nn::init::zeros_(p);  // LayerNorm gains stay 1
    } else {
      nn::init::normal_(p, 0, name.ends_with("c_proj.weight") ? residual_std : 0.02, gen);
    }
  }
}

Tensor GPT::trunk(const Tensor& idx) const {
  DLF_CHECK(idx.dim() == 2, "GPT: expected token ids [B, T], got ", shape_str(idx.shape()));
  const int64_t T = idx.size(1);
  DLF_CHECK(T >= 1 && T <= config_.context, "GPT '", config_.name, "': sequence length ", T,
            " is outside 1..", config_.context, " (the context)");
  const Tensor pos = arange(double(T), {.dtype = DType::i64, .device = idx.device()});
  Tensor x =
      transformer->drop->forward(transformer->wte->forward(idx) + transformer->wpe->forward(pos));
  for (const auto& block : *transformer->h) x = block->forward(x);
  return transformer->ln_f->forward(x);
}

Tensor GPT::forward(const Tensor& idx) const {
  return linear(trunk(idx), transformer->wte->weight);
}

GPT::Output GPT::forward(const Tensor& idx, const Tensor& targets) const {
  DLF_CHECK(targets.shape() == idx.shape(), "GPT: targets ", shape_str(targets.shape()),
            " do not match the tokens ", shape_str(idx.shape()));
  Tensor logits = forward(idx);
  Tensor loss = cross_entropy(logits.view({-1, config_.vocab}), targets.reshape({-1}));
  return {std::move(logits), std::move(loss)};
}

Tensor GPT::loss(const Tensor& idx, const Tensor& targets) const {
  return forward(idx, targets).loss;
}

Tensor GPT::generate(const Tensor& idx, int64_t tokens, double temperature, int64_t top_k,
                     Generator* gen) {
  DLF_CHECK(idx.dim() == 2 && idx.size(1) >= 1, "generate: expected a prompt [B, T >= 1], got ",
            shape_str(idx.shape()));
  autograd::NoGradGuard no_grad;
  const bool was_training = is_training();
  eval();
  Generator& g = gen ? *gen : default_generator();
  const int64_t B = idx.size(0), V = config_.vocab;
  Tensor out = idx.to(DType::i64);
  for (int64_t step = 0; step < tokens; ++step) {
    const int64_t T = out.size(1), start = std::max<int64_t>(0, T - config_.context);
    // The head only for the last position: [B, V], not [B, T, V].
    const Tensor last =
        linear(trunk(out.slice(1, start, T)).select(1, -1), transformer->wte->weight)
            .to(DType::f64)
            .contiguous();
    Tensor next = Tensor::empty({B, 1}, DType::i64, kCPU);
    for (int64_t b = 0; b < B; ++b) {
      const double* row = last.data<double>() + b * V;
      next.data<int64_t>()[b] = sample_token({row, row + V}, temperature, top_k, g);
    }
    out = cat({out, next}, 1);
  }
  train(was_training);
  return out;
}

double GPT::train_flops_per_token(int64_t seq) const {
  const auto& c = config_;
  const double n = double(num_parameters() - transformer->wpe->weight.numel());
  return 6 * n + 12.0 * double(c.layers) * double(seq) * double(c.dim);
}

}  // namespace dlf::models
