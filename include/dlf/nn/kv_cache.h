// Keys and values of the positions a decoder has already seen, kept so that each new token
// attends to them without recomputing them (llama.cpp's and Hugging Face's KV cache).
#pragma once
#include <cstdint>
#include <vector>

#include <dlf/core/factory.h>

namespace dlf::nn {

/// Every attention layer's keys and values, preallocated for `capacity` positions per row:
/// layer l holds keys and values [batch, kv_heads, capacity, head_dim]. Rows have lengths of
/// their own (prompts of different lengths). A model with grouped-query attention caches its
/// kv_heads, not its query heads: attend() broadcasts each kv head over its group of queries.
class KVCache {
 public:
  /// Zeroed keys and values, every row empty.
  KVCache(int64_t layers, int64_t batch, int64_t kv_heads, int64_t head_dim, int64_t capacity,
          TensorOptions options = {});

  int64_t layers() const { return static_cast<int64_t>(keys_.size()); }    ///< attention layers
  int64_t batch() const { return static_cast<int64_t>(lengths_.size()); }  ///< rows
  int64_t capacity() const { return capacity_; }  ///< positions a row can hold
  /// The positions each row holds (where its next token goes).
  const std::vector<int64_t>& lengths() const { return lengths_; }
  /// Sets each row's length (<= capacity): generation keeps a prompt's real positions after a
  /// right-padded prefill, and drops what a finished row wrote.
  void set_lengths(std::vector<int64_t> lengths);
  /// Every row's length plus `positions`, once every layer has attended them.
  void advance(int64_t positions);

  /// Layer `layer`'s causal attention of q [batch, heads, T, head_dim] over the row's cached
  /// positions followed by k, v [batch, kv_heads, T, head_dim], which it stores at positions
  /// lengths()..lengths() + T - 1 of each row (lengths() itself moves on with advance()).
  /// heads must be a multiple of kv_heads (query head h reads kv head h / (heads / kv_heads)).
  /// Rows of one length attend in one op, rows of different lengths one by one.
  Tensor attend(int64_t layer, const Tensor& q, const Tensor& k, const Tensor& v);

  /// Row `row` becomes a copy of row `from_row` of `other` (same layers, heads and capacity):
  /// its keys, values and length.
  void copy_row(int64_t row, const KVCache& other, int64_t from_row);

 private:
  std::vector<Tensor> keys_, values_;
  std::vector<int64_t> lengths_;
  int64_t capacity_;
};

}  // namespace dlf::nn
