#include <dlf/core/ops/join.h>
#include <dlf/core/ops/nn_ops.h>
#include <dlf/nn/kv_cache.h>

#include <algorithm>

namespace dlf::nn {
namespace {

// Causal attention of q [B, H, T, d] over k, v [B, Hkv, Tk, d], each kv head serving
// H / Hkv query heads: q is viewed [B, Hkv, H / Hkv, T, d] and k, v broadcast over the group.
Tensor grouped_attention(const Tensor& q, const Tensor& k, const Tensor& v) {
  const int64_t B = q.size(0), H = q.size(1), T = q.size(2), d = q.size(3), Hkv = k.size(1);
  if (H == Hkv) return scaled_dot_product_attention(q, k, v, true);
  const Tensor y = scaled_dot_product_attention(q.reshape({B, Hkv, H / Hkv, T, d}), k.unsqueeze(2),
                                                v.unsqueeze(2), true);
  return y.reshape({B, H, T, v.size(3)});
}

}  // namespace

KVCache::KVCache(int64_t layers, int64_t batch, int64_t kv_heads, int64_t head_dim,
                 int64_t capacity, TensorOptions options)
    : lengths_(size_t(std::max<int64_t>(batch, 0)), 0), capacity_(capacity) {
  DLF_CHECK(layers > 0 && batch > 0 && kv_heads > 0 && head_dim > 0 && capacity > 0,
            "KVCache: layers ", layers, ", batch ", batch, ", kv heads ", kv_heads, ", head dim ",
            head_dim, " and capacity ", capacity, " must all be positive");
  for (int64_t l = 0; l < layers; ++l) {
    keys_.push_back(zeros({batch, kv_heads, capacity, head_dim}, options));
    values_.push_back(zeros({batch, kv_heads, capacity, head_dim}, options));
  }
}

void KVCache::set_lengths(std::vector<int64_t> lengths) {
  DLF_CHECK(lengths.size() == lengths_.size(), "KVCache: ", lengths.size(),
            " lengths for a batch of ", lengths_.size());
  for (const int64_t n : lengths)
    DLF_CHECK(n >= 0 && n <= capacity_, "KVCache: length ", n, " is outside 0..", capacity_);
  lengths_ = std::move(lengths);
}

void KVCache::advance(int64_t positions) {
  std::vector<int64_t> lengths = lengths_;
  for (int64_t& n : lengths) n += positions;
  set_lengths(std::move(lengths));
}

Tensor KVCache::attend(int64_t layer, const Tensor& q, const Tensor& k, const Tensor& v) {
  DLF_CHECK(layer >= 0 && layer < layers(), "KVCache: layer ", layer, " of ", layers());
  const Tensor &keys = keys_[size_t(layer)], &values = values_[size_t(layer)];
  DLF_CHECK(k.dim() == 4 && k.shape() == v.shape() && k.size(0) == batch() &&
                k.size(1) == keys.size(1) && k.size(3) == keys.size(3),
            "KVCache: expected k and v [", batch(), ", ", keys.size(1), ", T, ", keys.size(3),
            "], got ", shape_str(k.shape()), " and ", shape_str(v.shape()));
  DLF_CHECK(q.dim() == 4 && q.size(0) == batch() && q.size(1) % k.size(1) == 0 &&
                q.size(2) == k.size(2) && q.size(3) == k.size(3),
            "KVCache: queries ", shape_str(q.shape()), " do not match keys ", shape_str(k.shape()));
  const int64_t T = k.size(2);
  for (const int64_t n : lengths_)
    DLF_CHECK(n + T <= capacity_, "KVCache: ", n, " cached positions and ", T,
              " new ones are more than its capacity of ", capacity_);
  const bool one_length =
      std::all_of(lengths_.begin(), lengths_.end(), [&](int64_t n) { return n == lengths_[0]; });
  if (one_length) {
    const int64_t n = lengths_[0];
    keys.narrow(2, n, T).copy_(k);
    values.narrow(2, n, T).copy_(v);
    return grouped_attention(q, keys.narrow(2, 0, n + T), values.narrow(2, 0, n + T));
  }
  std::vector<Tensor> rows;
  for (int64_t b = 0; b < batch(); ++b) {
    const int64_t n = lengths_[size_t(b)];
    const Tensor row_keys = keys.narrow(0, b, 1), row_values = values.narrow(0, b, 1);
    row_keys.narrow(2, n, T).copy_(k.narrow(0, b, 1));
    row_values.narrow(2, n, T).copy_(v.narrow(0, b, 1));
    rows.push_back(grouped_attention(q.narrow(0, b, 1), row_keys.narrow(2, 0, n + T),
                                     row_values.narrow(2, 0, n + T)));
  }
  return cat(rows, 0);
}

void KVCache::copy_row(int64_t row, const KVCache& other, int64_t from_row) {
  DLF_CHECK(row >= 0 && row < batch() && from_row >= 0 && from_row < other.batch() &&
                other.layers() == layers() && other.capacity() == capacity_ &&
                other.keys_[0].size(1) == keys_[0].size(1) &&
                other.keys_[0].size(3) == keys_[0].size(3),
            "KVCache: row ", from_row, " of another cache does not fit row ", row);
  for (size_t l = 0; l < keys_.size(); ++l) {
    keys_[l].narrow(0, row, 1).copy_(other.keys_[l].narrow(0, from_row, 1));
    values_[l].narrow(0, row, 1).copy_(other.values_[l].narrow(0, from_row, 1));
  }
  lengths_[size_t(row)] = other.lengths_[size_t(from_row)];
}

}  // namespace dlf::nn
