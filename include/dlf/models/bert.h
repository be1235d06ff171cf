// BERT for masked-language modelling as Hugging Face's BertForMaskedLM builds it: word,
// position and token-type embeddings, post-LayerNorm encoder layers with bidirectional attention
// and a GELU (erf) feed-forward, and a prediction head (dense, GELU, LayerNorm) whose decoder is
// tied to the word embedding. Parameter names and shapes are Hugging Face's
// (bert.embeddings.word_embeddings.weight, bert.encoder.layer.0.attention.self.query.weight, ...,
// cls.predictions.bias), so its checkpoints map one to one. No pooler (the MLM model has none),
// no dropout; LayerNorm eps 1e-12.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include <dlf/core/ops/nn_ops.h>
#include <dlf/core/random.h>
#include <dlf/nn/containers.h>
#include <dlf/nn/linear.h>
#include <dlf/nn/normalization.h>
#include <dlf/parallel/tp_sharding.h>

namespace dlf::models {

/// BERT's sizes (Devlin et al. 2019), byte-level by default.
struct BertConfig {
  std::string name;             ///< the registry's name ("bert-mini")
  int64_t vocab = 256;          ///< token ids 0..vocab-1 (bytes, the [MASK] byte among them)
  int64_t max_positions = 512;  ///< the longest sequence
  int64_t type_vocab = 2;       ///< segment ids 0..type_vocab-1
  int64_t layers = 2;           ///< encoder layers
  int64_t heads = 2;            ///< attention heads (dim must split into them)
  int64_t dim = 128;            ///< hidden size
  int64_t ffn = 512;            ///< the feed-forward layer's inner size
  DType dtype = DType::f32;     ///< of the parameters
  /// Makes the encoder's Linear layers; empty: whole ones. parallel::megatron_linears(group)
  /// splits each layer's heads and intermediate units over a tensor-parallel group (the
  /// embeddings and the MLM head stay whole on every rank).
  nn::LinearMaker linears = {};
};

/// bert-tiny, bert-mini (byte-level, 3.4M parameters) and bert-base (Devlin et al. 2019's
/// sizes over bytes).
const std::vector<BertConfig>& bert_configs();
/// How tensor parallelism splits BERT's parameter `name` (Megatron-LM's BERT): q, k, v and the
/// intermediate layer by output rows, the two output dense layers by input columns.
parallel::Split bert_tensor_parallel_split(const std::string& name);
/// The config named `name`; a dlf::Error lists the known names otherwise.
BertConfig bert_config(const std::string& name);

/// The [MASK] token of byte-level BERT: byte 0 never occurs in text.
constexpr int64_t kMaskToken = 0;

/// word + position + token-type (0) embeddings, then LayerNorm.
class BertEmbeddings : public nn::Module {
 public:
  /// The three embeddings and the LayerNorm of `config`.
  explicit BertEmbeddings(const BertConfig& config);
  /// Token ids [B, T] -> [B, T, dim].
  Tensor forward(const Tensor& ids) const;

  /// [vocab, dim], [max_positions, dim], [type_vocab, dim].
  ///@{
  std::shared_ptr<nn::Embedding> word_embeddings, position_embeddings, token_type_embeddings;
  ///@}
  std::shared_ptr<nn::LayerNorm> norm;  ///< "LayerNorm"
};

/// query, key and value projections; the heads attend to every position (fused kernel).
class BertSelfAttention : public nn::Module {
 public:
  /// Q, k and v projections of `config` (split over tp by its linears)
  explicit BertSelfAttention(const BertConfig& config);
  /// x [B, T, dim] -> the heads' outputs side by side, [B, T, dim].
  Tensor forward(const Tensor& x) const;

  /// q, k and v: dim -> dim each (this rank's heads under tp)
  ///@{
  std::shared_ptr<nn::Linear> query, key, value;
  ///@}
  int64_t head_dim;  ///< dim / heads
  int64_t heads;     ///< the heads this module holds: all, or its tensor-parallel share
};

/// LayerNorm(dense(h) + residual): Hugging Face's BertSelfOutput and BertOutput.
class BertResidualNorm : public nn::Module {
 public:
  /// Dense in -> dim, then LayerNorm(dense(h) + residual)
  BertResidualNorm(int64_t in, const BertConfig& config);
  /// H [..., in], residual [..., dim] -> [..., dim].
  Tensor forward(const Tensor& h, const Tensor& residual) const;

  std::shared_ptr<nn::Linear> dense;    ///< in -> dim
  std::shared_ptr<nn::LayerNorm> norm;  ///< "LayerNorm"
};

/// self-attention, then its residual LayerNorm ("output").
class BertAttention : public nn::Module {
 public:
  /// Self-attention, then its output's residual LayerNorm.
  explicit BertAttention(const BertConfig& config);
  Tensor forward(const Tensor& x) const;  ///< x [B, T, dim] -> [B, T, dim]

  std::shared_ptr<BertSelfAttention> self;   ///< q, k, v and the attention itself
  std::shared_ptr<BertResidualNorm> output;  ///< dense, residual, LayerNorm
};

/// GELU (erf) of a dense layer to ffn units.
class BertIntermediate : public nn::Module {
 public:
  explicit BertIntermediate(const BertConfig& config);  ///< dense dim -> ffn
  Tensor forward(const Tensor& x) const;  ///< GELU(dense(x)): [..., dim] -> [..., ffn]

  std::shared_ptr<nn::Linear> dense;  ///< dim -> ffn
};

/// attention, intermediate, output: post-LayerNorm.
class BertLayer : public nn::Module {
 public:
  explicit BertLayer(const BertConfig& config);  ///< a layer of `config`'s sizes
  Tensor forward(const Tensor& x) const;         ///< x [B, T, dim] -> [B, T, dim]
  bool is_block() const override { return true; }

  std::shared_ptr<BertAttention> attention;        ///< self-attention and its residual LayerNorm
  std::shared_ptr<BertIntermediate> intermediate;  ///< the feed-forward layer's first half, GELU
  std::shared_ptr<BertResidualNorm> output;        ///< its second half, residual and LayerNorm
};

/// encoder.layer.{i}.
class BertEncoder : public nn::Module {
 public:
  explicit BertEncoder(const BertConfig& config);  ///< `config.layers` layers
  Tensor forward(const Tensor& x) const;           ///< x [B, T, dim] through every layer

  std::shared_ptr<nn::ModuleList<BertLayer>> layer;  ///< encoder.layer.{i}
};

/// The trunk, named `bert` in the model: embeddings, then the encoder.
class BertModel : public nn::Module {
 public:
  explicit BertModel(const BertConfig& config);  ///< embeddings and encoder of `config`
  /// Token ids [B, T] -> the last layer's output [B, T, dim].
  Tensor forward(const Tensor& ids) const;

  /// Word, position and token-type embeddings, LayerNorm.
  std::shared_ptr<BertEmbeddings> embeddings;
  std::shared_ptr<BertEncoder> encoder;  ///< the layers
};

/// LayerNorm(GELU(dense(h))).
class BertPredictionHeadTransform : public nn::Module {
 public:
  /// Dense, GELU, LayerNorm of `config.dim`.
  explicit BertPredictionHeadTransform(const BertConfig& config);
  Tensor forward(const Tensor& h) const;  ///< h [..., dim] -> [..., dim]

  std::shared_ptr<nn::Linear> dense;    ///< dim -> dim
  std::shared_ptr<nn::LayerNorm> norm;  ///< "LayerNorm"
};

/// cls.predictions: the transform, then the decoder, whose weight is the word embedding (tied,
/// named `decoder.weight` too, as in Hugging Face's state_dict) and whose bias is `bias`.
class BertLMPredictionHead : public nn::Module {
 public:
  /// The head, its decoder tied to `word_embeddings` [vocab, dim].
  BertLMPredictionHead(const BertConfig& config, const Tensor& word_embeddings);
  /// Hidden states [..., dim] -> logits [..., vocab].
  Tensor forward(const Tensor& h) const;

  Tensor bias;  ///< the decoder's own bias [vocab]
  /// Dense, GELU, LayerNorm before the decoder.
  std::shared_ptr<BertPredictionHeadTransform> transform;
  Tensor decoder_weight;  ///< the word embeddings' weight, shared
};

/// BERT with its masked-language-model head (Hugging Face's BertForMaskedLM).
class BertForMaskedLM : public nn::Module {
 public:
  /// Initialised as Hugging Face does (weights N(0, 0.02), biases 0, LayerNorm 1 and 0),
  /// drawing from `gen` (the default generator if null).
  explicit BertForMaskedLM(BertConfig config, Generator* gen = nullptr);

  /// Token ids [B, T] (T <= max_positions, token type 0) -> logits [B, T, vocab].
  Tensor forward(const Tensor& ids) const;
  /// Cross-entropy of forward(ids) against `labels` [B, T], over the positions whose label is
  /// not -100 (Hugging Face's loss): their mean (NaN when every label is -100, as in PyTorch),
  /// or with `reduction` sum their sum. Every position runs through the head, so the shapes do
  /// not depend on which are masked and a captured graph replays the step.
  Tensor loss(const Tensor& ids, const Tensor& labels, Reduction reduction = Reduction::mean) const;
  /// loss() from logits [B, T, vocab] that forward(ids) already made.
  static Tensor loss_of(const Tensor& logits, const Tensor& labels,
                        Reduction reduction = Reduction::mean);

  /// The sizes it was built with.
  const BertConfig& config() const { return config_; }
  std::shared_ptr<BertModel> bert;                    ///< the encoder (bert.*)
  std::shared_ptr<BertLMPredictionHead> predictions;  ///< "cls.predictions"

 private:
  BertConfig config_;
};

}  // namespace dlf::models
