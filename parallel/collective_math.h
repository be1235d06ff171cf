// The arithmetic of the collectives, shared by the backends: reduce the ranks' buffers over an
// element range, always adding in rank order (so every backend gives the same bits).
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

/// Throws dlf::Error unless `dtype` and `op` go together (avg needs a floating dtype).
void check_reducible(DType dtype, ReduceOp op, const std::string& group);

}  // namespace dlf::parallel::detail
