// The arithmetic and the checks of the collectives, shared by the backends: reduce the ranks'
// buffers over an element range, always adding in rank order (so every backend gives the same
// bits), and refuse bad arguments with the same messages.
#pragma once
#include <cstdint>
#include <span>

#include <dlf/core/dtype.h>
#include <dlf/parallel/communicator.h>

namespace dlf::parallel::detail {

/// out[i - lo] = reduce over r of inputs[r][i], for i in [lo, hi). `inputs` are contiguous
/// buffers of `dtype`; `out` may be inputs[r] + lo. Throws dlf::Error for a dtype or op that
/// cannot be reduced.
void reduce_range(std::span<const void* const> inputs, void* out, int64_t lo, int64_t hi,
                  DType dtype, ReduceOp op);

/// Whether a collective moves bytes of `t` (none on meta devices, none in an empty tensor).
inline bool has_data(const Tensor& t) { return t.device().has_data() && t.numel() > 0; }

/// allgather's result: `shape` with dim 0 times `size`. Throws dlf::Error for a scalar.
Shape gathered_shape(const Shape& shape, int size, const std::string& group);
/// reduce_scatter's result: `shape` with dim 0 cut into `size` parts. Throws dlf::Error unless
/// dim 0 divides into them.
Shape scattered_shape(const Shape& shape, int size, const std::string& group);

// Each throws dlf::Error, naming the collective `what` and the group, unless:

/// `dtype` and `op` go together (avg needs a floating dtype).
void check_reducible(DType dtype, ReduceOp op, const std::string& group);
/// `t` is contiguous: collectives move its bytes as they lie.
void check_contiguous(const Tensor& t, const char* what, const std::string& group);
/// `root` is a rank of a group of `size`.
void check_rank(int root, int size, const char* what, const std::string& group);
/// `peer` is another rank than `self` in a group of `size` (send/recv).
void check_peer(int peer, int self, int size, const char* what, const std::string& group);
/// Rank `r` brings rank 0's shape and dtype to the collective.
void check_same_tensor(const char* what, const std::string& group, int r, const Shape& shape0,
                       DType dtype0, const Shape& shape, DType dtype);
/// The message rank `src` sent (its shape and dtype) fits `t`, the tensor receiving it.
void check_message(const Shape& shape, DType dtype, int src, const Tensor& t,
                   const std::string& group);

}  // namespace dlf::parallel::detail
