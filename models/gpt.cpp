#include <dlf/core/factory.h>
#include <dlf/core/ops/nn_ops.h>
#include <dlf/models/gpt.h>
#include <dlf/nn/init.h>

#include <cmath>

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

Tensor GPT::hidden(const Tensor& idx, nn::KVCache* cache) const {
  DLF_CHECK(idx.dim() == 2, "GPT: expected token ids [B, T], got ", shape_str(idx.shape()));
  const int64_t B = idx.size(0), T = idx.size(1);
  DLF_CHECK(T >= 1 && T <= config_.context, "GPT '", config_.name, "': sequence length ", T,
            " is outside 1..", config_.context, " (the context)");
  Tensor pos;
  if (!cache) {
    pos = arange(double(T), {.dtype = DType::i64, .device = idx.device()});
  } else {
    check_cache(*cache, config_.layers, B, T);
    std::vector<int64_t> positions;  // row b's tokens at cache->lengths()[b] onwards
    for (const int64_t n : cache->lengths())
      for (int64_t t = 0; t < T; ++t) positions.push_back(n + t);
    pos = from_vector(positions, {B, T}).to(idx.device());
  }
  Tensor x =
      transformer->drop->forward(transformer->wte->forward(idx) + transformer->wpe->forward(pos));
  for (int64_t i = 0; i < config_.layers; ++i) {
    const auto& block = (*transformer->h)[size_t(i)];
    x = cache ? block.forward(x, *cache, i) : block.forward(x);
  }
  if (cache) cache->advance(T);
  return transformer->ln_f->forward(x);
}

Tensor GPT::head(const Tensor& hidden) const { return linear(hidden, transformer->wte->weight); }

Tensor GPT::forward(const Tensor& idx) const { return head(hidden(idx)); }

Tensor GPT::forward(const Tensor& idx, nn::KVCache& cache) const {
  return head(hidden(idx, &cache));
}

nn::KVCache GPT::make_cache(int64_t batch, int64_t capacity) const {
  const nn::SelfAttention& attn = *(*transformer->h)[0].attn;
  const Tensor& w = transformer->wte->weight;
  return nn::KVCache(config_.layers, batch, attn.heads, attn.head_dim,
                     capacity > 0 ? capacity : config_.context,
                     {.dtype = w.dtype(), .device = w.device()});
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
  const Tensor prompts = idx.to(DType::i64).contiguous();
  const int64_t B = idx.size(0), T0 = idx.size(1);
  std::vector<std::vector<int64_t>> rows;
  for (int64_t b = 0; b < B; ++b) rows.push_back(prompts.select(0, b).to_vector<int64_t>());
  const auto made = models::generate(
      *this, rows,
      {.max_tokens = tokens, .sampling = {.temperature = temperature, .top_k = top_k}, .gen = gen});
  std::vector<int64_t> out;
  for (int64_t b = 0; b < B; ++b) {
    out.insert(out.end(), rows[size_t(b)].begin(), rows[size_t(b)].end());
    out.insert(out.end(), made[size_t(b)].begin(), made[size_t(b)].end());
  }
  return from_vector(out, {B, T0 + tokens});
}

double GPT::train_flops_per_token(int64_t seq) const {
  const auto& c = config_;
  const double n = double(num_parameters() - transformer->wpe->weight.numel());
  return 6 * n + 12.0 * double(c.layers) * double(seq) * double(c.dim);
}

}  // namespace dlf::models
