// What generate() drives: a decoder-only language model with a key/value cache. GPT and Llama
// are ones; a family whose model is one gets generation, batched prompts and the cache for free.
#pragma once
#include <cstdint>
#include <string>

#include <dlf/nn/kv_cache.h>
#include <dlf/nn/module.h>

namespace dlf::models {

/// A causal language model: token ids in, hidden states and logits out, through a KVCache.
class CausalLM : public nn::Module {
 public:
  /// Everything before the head: the final norm's output [B, T, dim] of idx [B, T]; through
  /// `cache` when not null (row b's tokens at positions cache->lengths()[b]..., their keys and
  /// values stored, the cache moved on by T).
  virtual Tensor hidden(const Tensor& idx, nn::KVCache* cache = nullptr) const = 0;
  /// The head: hidden states [..., dim] -> logits [..., vocab].
  virtual Tensor head(const Tensor& hidden) const = 0;
  /// An empty key/value cache of `batch` rows of up to `capacity` positions (0: the context),
  /// in the parameters' dtype and device, for the model's layers and (tensor-parallel share of)
  /// key/value heads.
  virtual nn::KVCache make_cache(int64_t batch, int64_t capacity = 0) const = 0;
  /// The registry's name ("gpt-mini"), for messages.
  virtual const std::string& model_name() const = 0;
  virtual int64_t vocab() const = 0;    ///< token ids 0..vocab-1
  virtual int64_t context() const = 0;  ///< the longest sequence

 protected:
  /// A dlf::Error unless `cache` serves tokens [B, T] of this model of `layers` attention layers:
  /// B rows, `layers` layers, and room for T more positions in every row within the context.
  void check_cache(const nn::KVCache& cache, int64_t layers, int64_t B, int64_t T) const;
};

}  // namespace dlf::models
