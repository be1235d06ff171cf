// The ops epilogue fusion makes: a matrix product or a convolution with the add of a tensor of
// its output's shape folded into the same kernel (oneDNN's binary or sum post-op), as
// Inductor's mkldnn linear and convolution ops with a binary epilogue.
#pragma once
#include <dlf/core/op.h>

namespace dlf::graph {

/// The fused op of `base` — "matmul_add", "linear_add" or "conv2d_add" for matmul, linear and
/// conv2d; nullptr for any other op. Its inputs are base's
/// and then `other`, its attrs base's: out = base(inputs) + other, where other has the output's
/// shape and dtype (any strides).
const OpDef* epilogue_add_op(const OpDef& base);

/// For a fused product: the index of its added input, whose bytes its output may be given when
/// that input dies there (its kernel reads each element before writing over it); else -1.
int added_input(const OpDef& op);

}  // namespace dlf::graph
