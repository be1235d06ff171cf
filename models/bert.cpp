#include <dlf/autograd/grad_mode.h>
#include <dlf/core/factory.h>
#include <dlf/core/ops/elementwise.h>
#include <dlf/core/ops/nn_ops.h>
#include <dlf/models/bert.h>
#include <dlf/nn/init.h>

#include <algorithm>

#include "named_config.h"

namespace dlf::models {
namespace {

constexpr double kLayerNormEps = 1e-12;

// An encoder layer's Linear, made by the config's maker (split when tensor-parallel).
std::shared_ptr<nn::Linear> dense_layer(int64_t in, int64_t out, nn::LinearParallel split,
                                        const BertConfig& c) {
  return nn::make_linear(c.linears, in, out, split, {.dtype = c.dtype});
}

std::shared_ptr<nn::LayerNorm> layer_norm(const BertConfig& c) {
  return std::make_shared<nn::LayerNorm>(c.dim, kLayerNormEps, true, c.dtype);
}

// GELU (erf) of dense(x). As in nn::MLP: with autograd on, the activation runs as its own op so
// backward has the matmul's output; without, it runs in the matmul's epilogue.
Tensor dense_gelu(const nn::Linear& dense, const Tensor& x) {
  return autograd::grad_enabled() ? gelu(dense.forward(x), GeluApproximation::erf)
                                  : dense.forward(x, Activation::gelu_erf);
}

// cls.predictions.decoder: the word embedding and cls.predictions.bias under their tied names.
struct TiedDecoder : nn::Module {
  TiedDecoder(const Tensor& weight, const Tensor& bias) {
    register_parameter("weight", weight);
    register_parameter("bias", bias);
  }
};

// `cls`, which holds `predictions` only.
struct OnlyMLMHead : nn::Module {
  explicit OnlyMLMHead(std::shared_ptr<BertLMPredictionHead> predictions) {
    register_module("predictions", std::move(predictions));
  }
};

void check_ids(const Tensor& ids, const BertConfig& c) {
  DLF_CHECK(ids.dim() == 2, "BERT: expected token ids [B, T], got ", shape_str(ids.shape()));
  DLF_CHECK(ids.size(1) >= 1 && ids.size(1) <= c.max_positions, "BERT '", c.name,
            "': sequence length ", ids.size(1), " is outside 1..", c.max_positions,
            " (max_positions)");
}

}  // namespace

// Hidden sizes after Devlin et al. 2019 (tiny and mini as in Turc et al. 2019's small BERTs),
// over bytes: vocabulary 256, 512 positions.
const std::vector<BertConfig>& bert_configs() {
  static const std::vector<BertConfig> configs = {
      {.name = "bert-tiny", .layers = 2, .heads = 2, .dim = 128, .ffn = 512},
      {.name = "bert-mini", .layers = 4, .heads = 4, .dim = 256, .ffn = 1024},
      {.name = "bert-base", .layers = 12, .heads = 12, .dim = 768, .ffn = 3072},
  };
  return configs;
}

BertConfig bert_config(const std::string& name) {
  return detail::config_named(bert_configs(), name, "BERT");
}

BertEmbeddings::BertEmbeddings(const BertConfig& c)
    : word_embeddings(register_module("word_embeddings",
                                      std::make_shared<nn::Embedding>(c.vocab, c.dim, c.dtype))),
      position_embeddings(register_module(
          "position_embeddings", std::make_shared<nn::Embedding>(c.max_positions, c.dim, c.dtype))),
      token_type_embeddings(register_module(
          "token_type_embeddings", std::make_shared<nn::Embedding>(c.type_vocab, c.dim, c.dtype))),
      norm(register_module("LayerNorm", layer_norm(c))) {}

Tensor BertEmbeddings::forward(const Tensor& ids) const {
  const int64_t T = ids.size(1);
  const TensorOptions index{.dtype = DType::i64, .device = ids.device()};
  // Position and token-type rows are summed once, [T, dim], and broadcast over the batch.
  const Tensor per_position = position_embeddings->forward(arange(double(T), index)) +
                              token_type_embeddings->forward(zeros({T}, index));
  return norm->forward(word_embeddings->forward(ids) + per_position);
}

parallel::Split bert_tensor_parallel_split(const std::string& name) {
  using parallel::Split;
  if (!name.starts_with("bert.encoder.")) return Split::none;
  for (const char* split_rows : {"attention.self.query.", "attention.self.key.",
                                 "attention.self.value.", "intermediate.dense."}) {
    if (name.find(split_rows) != std::string::npos) return Split::rows;
  }
  if (name.ends_with("output.dense.weight")) return Split::columns;  // attention's and the layer's
  return Split::none;
}

BertSelfAttention::BertSelfAttention(const BertConfig& c)
    : query(register_module("query", dense_layer(c.dim, c.dim, nn::LinearParallel::column, c))),
      key(register_module("key", dense_layer(c.dim, c.dim, nn::LinearParallel::column, c))),
      value(register_module("value", dense_layer(c.dim, c.dim, nn::LinearParallel::column, c))),
      head_dim(c.dim / c.heads),
      heads(query->weight.size(0) / head_dim) {
  DLF_CHECK(heads * head_dim == query->weight.size(0), "BERT: ", c.heads,
            " heads do not split over the tensor-parallel ranks");
}

Tensor BertSelfAttention::forward(const Tensor& x) const {
  const int64_t B = x.size(0), T = x.size(1);
  // [B, T, C] -> strided [B, H, T, hd] views: the attention kernel reads them in place.
  auto split_heads = [&](const nn::Linear& proj) {
    return proj.forward(x).view({B, T, heads, head_dim}).transpose(1, 2);
  };
  const Tensor y = scaled_dot_product_attention(split_heads(*query), split_heads(*key),
                                                split_heads(*value), /*causal=*/false);
  return y.transpose(1, 2).reshape({B, T, heads * head_dim});
}

BertResidualNorm::BertResidualNorm(int64_t in, const BertConfig& c)
    : dense(register_module("dense", dense_layer(in, c.dim, nn::LinearParallel::row, c))),
      norm(register_module("LayerNorm", layer_norm(c))) {}

Tensor BertResidualNorm::forward(const Tensor& h, const Tensor& residual) const {
  return norm->forward(dense->forward(h) + residual);
}

BertAttention::BertAttention(const BertConfig& c)
    : self(register_module("self", std::make_shared<BertSelfAttention>(c))),
      output(register_module("output", std::make_shared<BertResidualNorm>(c.dim, c))) {}

Tensor BertAttention::forward(const Tensor& x) const {
  return output->forward(self->forward(x), x);
}

BertIntermediate::BertIntermediate(const BertConfig& c)
    : dense(register_module("dense", dense_layer(c.dim, c.ffn, nn::LinearParallel::column, c))) {}

Tensor BertIntermediate::forward(const Tensor& x) const { return dense_gelu(*dense, x); }

BertLayer::BertLayer(const BertConfig& c)
    : attention(register_module("attention", std::make_shared<BertAttention>(c))),
      intermediate(register_module("intermediate", std::make_shared<BertIntermediate>(c))),
      output(register_module("output", std::make_shared<BertResidualNorm>(c.ffn, c))) {}

Tensor BertLayer::forward(const Tensor& x) const {
  return run_block(
      [this](const std::vector<Tensor>& in) {
        const Tensor a = attention->forward(in[0]);
        return output->forward(intermediate->forward(a), a);
      },
      {x});
}

BertEncoder::BertEncoder(const BertConfig& c)
    : layer(register_module("layer", std::make_shared<nn::ModuleList<BertLayer>>())) {
  for (int64_t i = 0; i < c.layers; ++i) layer->push_back(std::make_shared<BertLayer>(c));
}

Tensor BertEncoder::forward(const Tensor& x) const {
  Tensor h = x;
  for (const auto& l : *layer) h = l->forward(h);
  return h;
}

BertModel::BertModel(const BertConfig& c)
    : embeddings(register_module("embeddings", std::make_shared<BertEmbeddings>(c))),
      encoder(register_module("encoder", std::make_shared<BertEncoder>(c))) {}

Tensor BertModel::forward(const Tensor& ids) const {
  return encoder->forward(embeddings->forward(ids));
}

BertPredictionHeadTransform::BertPredictionHeadTransform(const BertConfig& c)
    : dense(register_module("dense", std::make_shared<nn::Linear>(
                                         c.dim, c.dim, nn::LinearOptions{.dtype = c.dtype}))),
      norm(register_module("LayerNorm", layer_norm(c))) {}

Tensor BertPredictionHeadTransform::forward(const Tensor& h) const {
  return norm->forward(dense_gelu(*dense, h));
}

BertLMPredictionHead::BertLMPredictionHead(const BertConfig& c, const Tensor& word_embeddings)
    : bias(register_parameter("bias", zeros({c.vocab}, {.dtype = c.dtype}))),
      transform(register_module("transform", std::make_shared<BertPredictionHeadTransform>(c))),
      decoder_weight(word_embeddings) {
  register_module("decoder", std::make_shared<TiedDecoder>(decoder_weight, bias));
}

Tensor BertLMPredictionHead::forward(const Tensor& h) const {
  return linear(transform->forward(h), decoder_weight, bias);
}

BertForMaskedLM::BertForMaskedLM(BertConfig config, Generator* gen) : config_(std::move(config)) {
  const BertConfig& c = config_;
  DLF_CHECK(c.vocab > 0 && c.max_positions > 0 && c.type_vocab > 0 && c.layers > 0 && c.heads > 0 &&
                c.dim % c.heads == 0 && c.ffn > 0,
            "BERT '", c.name, "': bad config (vocab ", c.vocab, ", max_positions ", c.max_positions,
            ", type_vocab ", c.type_vocab, ", layers ", c.layers, ", heads ", c.heads, ", dim ",
            c.dim, ", ffn ", c.ffn, ")");
  bert = register_module("bert", std::make_shared<BertModel>(c));
  predictions =
      std::make_shared<BertLMPredictionHead>(c, bert->embeddings->word_embeddings->weight);
  register_module("cls", std::make_shared<OnlyMLMHead>(predictions));
  for (const auto& [name, p] : named_parameters()) {
    if (name.find("LayerNorm") != std::string::npos) continue;  // gains 1, shifts 0
    if (p.dim() < 2) {
      nn::init::zeros_(p);
    } else {
      nn::init::normal_(p, 0, 0.02, gen);
    }
  }
}

Tensor BertForMaskedLM::forward(const Tensor& ids) const {
  check_ids(ids, config_);
  return predictions->forward(bert->forward(ids));
}

Tensor BertForMaskedLM::loss(const Tensor& ids, const Tensor& labels, Reduction reduction) const {
  DLF_CHECK(labels.shape() == ids.shape(), "BERT: labels ", shape_str(labels.shape()),
            " do not match the tokens ", shape_str(ids.shape()));
  return loss_of(forward(ids), labels, reduction);
}

Tensor BertForMaskedLM::loss_of(const Tensor& logits, const Tensor& labels, Reduction reduction) {
  return cross_entropy(logits.reshape({-1, logits.size(-1)}), labels.reshape({-1}),
                       {.reduction = reduction});
}

}  // namespace dlf::models
