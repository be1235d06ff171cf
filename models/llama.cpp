#include <dlf/core/ops/elementwise.h>
#include <dlf/core/ops/nn_ops.h>
#include <dlf/models/llama.h>
#include <dlf/nn/init.h>

#include "named_config.h"

namespace dlf::models {
namespace {

std::shared_ptr<nn::Linear> projection(const LlamaConfig& c, int64_t in, int64_t out,
                                       nn::LinearParallel split) {
  return nn::make_linear(c.linears, in, out, split, {.bias = false, .dtype = c.dtype});
}

LlamaConfig llama2(std::string name, int64_t dim, int64_t layers, int64_t heads, int64_t kv_heads,
                   int64_t ffn) {
  return {.name = std::move(name),
          .vocab = 32000,
          .context = 4096,
          .layers = layers,
          .heads = heads,
          .kv_heads = kv_heads,
          .dim = dim,
          .ffn = ffn};
}

LlamaConfig llama3(std::string name, int64_t dim, int64_t layers, int64_t heads, int64_t ffn) {
  return {.name = std::move(name),
          .vocab = 128256,
          .context = 8192,
          .layers = layers,
          .heads = heads,
          .kv_heads = 8,
          .dim = dim,
          .ffn = ffn,
          .theta = 500000};
}

}  // namespace

const std::vector<LlamaConfig>& llama_configs() {
  static const std::vector<LlamaConfig> configs = [] {
    // Hugging Face's config.json of each (Touvron et al. 2023; Dubey et al. 2024, table 3).
    LlamaConfig llama31_405b = llama3("llama3-405b", 16384, 126, 128, 53248);
    llama31_405b.context = 131072;  // Llama 3.1: 8192 stretched 16x by the frequency scaling
    llama31_405b.rope_scaling = {.factor = 8, .original_context = 8192};
    return std::vector<LlamaConfig>{
        {.name = "llama-nano",
         .context = 64,
         .layers = 2,
         .heads = 4,
         .kv_heads = 2,
         .dim = 64,
         .ffn = 192},
        {.name = "llama-mini",
         .context = 256,
         .layers = 6,
         .heads = 6,
         .kv_heads = 2,
         .dim = 384,
         .ffn = 1152},
        {.name = "llama-small",
         .vocab = 32000,
         .context = 1024,
         .layers = 12,
         .heads = 12,
         .kv_heads = 4,
         .dim = 768,
         .ffn = 2048},
        llama2("llama2-7b", 4096, 32, 32, 32, 11008),
        llama2("llama2-13b", 5120, 40, 40, 40, 13824),
        llama2("llama2-70b", 8192, 80, 64, 8, 28672),
        llama3("llama3-8b", 4096, 32, 32, 14336),
        llama3("llama3-70b", 8192, 80, 64, 28672),
        llama31_405b,
    };
  }();
  return configs;
}

LlamaConfig llama_config(const std::string& name) {
  return detail::config_named(llama_configs(), name, "Llama");
}

parallel::Split llama_tensor_parallel_split(const std::string& name) {
  using parallel::Split;
  if (!name.starts_with("model.layers.")) return Split::none;
  for (const char* rows : {".q_proj.", ".k_proj.", ".v_proj.", ".gate_proj.", ".up_proj."}) {
    if (name.find(rows) != std::string::npos) return Split::rows;
  }
  if (name.ends_with("o_proj.weight") || name.ends_with("down_proj.weight")) return Split::columns;
  return Split::none;
}

LlamaAttention::LlamaAttention(const LlamaConfig& c)
    : head_dim(c.dim / c.heads),
      rotary{.theta = c.theta,
             .interleaved = c.rotary_interleaved,
             .seq_dim = 1,
             .scaling = c.rope_scaling} {
  using nn::LinearParallel;
  q_proj = register_module("q_proj", projection(c, c.dim, c.dim, LinearParallel::column));
  k_proj = register_module("k_proj",
                           projection(c, c.dim, c.kv_heads * head_dim, LinearParallel::column));
  v_proj = register_module("v_proj",
                           projection(c, c.dim, c.kv_heads * head_dim, LinearParallel::column));
  o_proj = register_module("o_proj", projection(c, c.dim, c.dim, LinearParallel::row));
  DLF_CHECK(k_proj->weight.size(0) % head_dim == 0 &&
                q_proj->weight.size(0) % k_proj->weight.size(0) == 0,
            "Llama: ", c.kv_heads, " kv heads do not split over the tensor-parallel ranks");
}

Tensor LlamaAttention::forward(const Tensor& x) const {
  const int64_t B = x.size(0), T = x.size(1);
  const int64_t kv = k_proj->weight.size(0) / head_dim;          // this rank's kv heads
  const int64_t group = q_proj->weight.size(0) / head_dim / kv;  // query heads per kv head
  // Rotated as [B, T, heads, d] (positions along dim 1), then viewed as [B, kv, group, T, d]
  // query heads against [B, kv, 1, T, d] keys and values: each kv head serves its group without
  // a copy (the attention kernel broadcasts it, and sums its gradient over the group).
  const Tensor q = rotary_embedding(q_proj->forward(x).view({B, T, kv, group, head_dim}), rotary)
                       .permute({0, 2, 3, 1, 4});
  auto kv_heads = [&](const Tensor& t) { return t.permute({0, 2, 1, 3}).unsqueeze(2); };
  const Tensor k =
      kv_heads(rotary_embedding(k_proj->forward(x).view({B, T, kv, head_dim}), rotary));
  const Tensor v = kv_heads(v_proj->forward(x).view({B, T, kv, head_dim}));
  const Tensor y = scaled_dot_product_attention(q, k, v, /*causal=*/true);
  return o_proj->forward(y.permute({0, 3, 1, 2, 4}).reshape({B, T, kv * group * head_dim}));
}

Tensor LlamaAttention::forward(const Tensor& x, nn::KVCache& cache, int64_t layer) const {
  const int64_t B = x.size(0), T = x.size(1);
  const int64_t kv = k_proj->weight.size(0) / head_dim, heads = q_proj->weight.size(0) / head_dim;
  // Each row's tokens rotated from its own cached length on; the cache broadcasts each kv head
  // over its group of query heads.
  RotaryOptions at = rotary;
  at.row_offsets = cache.lengths();
  auto rotated = [&](const std::shared_ptr<nn::Linear>& proj, int64_t n) {
    return rotary_embedding(proj->forward(x).view({B, T, n, head_dim}), at).transpose(1, 2);
  };
  const Tensor v = v_proj->forward(x).view({B, T, kv, head_dim}).transpose(1, 2);
  const Tensor y = cache.attend(layer, rotated(q_proj, heads), rotated(k_proj, kv), v);
  return o_proj->forward(y.transpose(1, 2).reshape({B, T, heads * head_dim}));
}

LlamaMLP::LlamaMLP(const LlamaConfig& c)
    : gate_proj(
          register_module("gate_proj", projection(c, c.dim, c.ffn, nn::LinearParallel::column))),
      up_proj(register_module("up_proj", projection(c, c.dim, c.ffn, nn::LinearParallel::column))),
      down_proj(
          register_module("down_proj", projection(c, c.ffn, c.dim, nn::LinearParallel::row))) {}

Tensor LlamaMLP::forward(const Tensor& x) const {
  return down_proj->forward(swiglu(gate_proj->forward(x), up_proj->forward(x)));
}

LlamaDecoderLayer::LlamaDecoderLayer(const LlamaConfig& c)
    : input_layernorm(register_module("input_layernorm",
                                      std::make_shared<nn::RMSNorm>(c.dim, c.norm_eps, c.dtype))),
      post_attention_layernorm(register_module(
          "post_attention_layernorm", std::make_shared<nn::RMSNorm>(c.dim, c.norm_eps, c.dtype))),
      self_attn(register_module("self_attn", std::make_shared<LlamaAttention>(c))),
      mlp(register_module("mlp", std::make_shared<LlamaMLP>(c))) {}

Tensor LlamaDecoderLayer::forward(const Tensor& x) const {
  return run_block(
      [this](const std::vector<Tensor>& in) {
        const Tensor h = in[0] + self_attn->forward(input_layernorm->forward(in[0]));
        return h + mlp->forward(post_attention_layernorm->forward(h));
      },
      {x});
}

Tensor LlamaDecoderLayer::forward(const Tensor& x, nn::KVCache& cache, int64_t layer) const {
  const Tensor h = x + self_attn->forward(input_layernorm->forward(x), cache, layer);
  return h + mlp->forward(post_attention_layernorm->forward(h));
}

LlamaModel::LlamaModel(const LlamaConfig& c)
    : embed_tokens(register_module("embed_tokens",
                                   std::make_shared<nn::Embedding>(c.vocab, c.dim, c.dtype))),
      layers(register_module("layers", std::make_shared<nn::ModuleList<LlamaDecoderLayer>>())),
      norm(register_module("norm", std::make_shared<nn::RMSNorm>(c.dim, c.norm_eps, c.dtype))) {
  for (int64_t i = 0; i < c.layers; ++i) layers->push_back(std::make_shared<LlamaDecoderLayer>(c));
}

Llama::Llama(LlamaConfig config, Generator* gen) : config_(std::move(config)) {
  const LlamaConfig& c = config_;
  DLF_CHECK(c.vocab > 0 && c.context > 0 && c.layers > 0 && c.heads > 0 && c.kv_heads > 0 &&
                c.ffn > 0 && c.dim % c.heads == 0 && c.heads % c.kv_heads == 0 &&
                (c.dim / c.heads) % 2 == 0,
            "Llama '", c.name, "': bad config (vocab ", c.vocab, ", context ", c.context,
            ", layers ", c.layers, ", heads ", c.heads, ", kv heads ", c.kv_heads, ", dim ", c.dim,
            ", ffn ", c.ffn, "): dim must split into heads of even size, heads into kv heads");
  model = register_module("model", std::make_shared<LlamaModel>(c));
  // The head whole on every tensor-parallel rank (its logits feed one cross-entropy).
  lm_head = register_module(
      "lm_head", std::make_shared<nn::Linear>(c.dim, c.vocab,
                                              nn::LinearOptions{.bias = false, .dtype = c.dtype}));
  for (const auto& [name, p] : named_parameters()) {
    if (p.dim() >= 2) nn::init::normal_(p, 0, 0.02, gen);
  }
}

Tensor Llama::hidden(const Tensor& idx, nn::KVCache* cache) const {
  DLF_CHECK(idx.dim() == 2, "Llama: expected token ids [B, T], got ", shape_str(idx.shape()));
  const int64_t B = idx.size(0), T = idx.size(1);
  DLF_CHECK(T >= 1 && T <= config_.context, "Llama '", config_.name, "': sequence length ", T,
            " is outside 1..", config_.context, " (the context)");
  if (cache) check_cache(*cache, config_.layers, B, T);
  Tensor x = model->embed_tokens->forward(idx);
  for (int64_t i = 0; i < config_.layers; ++i) {
    const LlamaDecoderLayer& layer = (*model->layers)[size_t(i)];
    x = cache ? layer.forward(x, *cache, i) : layer.forward(x);
  }
  if (cache) cache->advance(T);
  return model->norm->forward(x);
}

Tensor Llama::head(const Tensor& hidden) const { return lm_head->forward(hidden); }

Tensor Llama::forward(const Tensor& idx) const { return head(hidden(idx)); }

Tensor Llama::forward(const Tensor& idx, nn::KVCache& cache) const {
  return head(hidden(idx, &cache));
}

nn::KVCache Llama::make_cache(int64_t batch, int64_t capacity) const {
  const LlamaAttention& attn = *(*model->layers)[0].self_attn;
  const Tensor& w = attn.k_proj->weight;
  return nn::KVCache(config_.layers, batch, w.size(0) / attn.head_dim, attn.head_dim,
                     capacity > 0 ? capacity : config_.context,
                     {.dtype = w.dtype(), .device = w.device()});
}

Tensor Llama::loss(const Tensor& idx, const Tensor& targets) const {
  DLF_CHECK(targets.shape() == idx.shape(), "Llama: targets ", shape_str(targets.shape()),
            " do not match the tokens ", shape_str(idx.shape()));
  return cross_entropy(forward(idx).view({-1, config_.vocab}), targets.reshape({-1}));
}

double Llama::train_flops_per_token(int64_t seq) const {
  const auto& c = config_;
  return 6 * double(num_parameters()) + 12.0 * double(c.layers) * double(seq) * double(c.dim);
}

}  // namespace dlf::models
