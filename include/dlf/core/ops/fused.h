// The fused ops graph mode's passes make. fused_elementwise: a chain of element-wise ops (their
// OpDef::pointwise) run as one loop over tiles of the output, each input read once, each output
// written once, the values in between kept in a per-thread scratch that stays in cache.
// matmul_add, linear_add and conv2d_add: a matrix product or a convolution with the add of a
// tensor of its output's shape folded into the same kernel (oneDNN's binary or sum post-op), as
// Inductor's mkldnn linear and convolution ops with a binary epilogue. They exist only in
// captured graphs, whose backward is already ops of their own.
#pragma once
#include <vector>

#include <dlf/core/op.h>

namespace dlf {

/// One op of a chain. Its sources index the fused node's inputs (0 .. inputs - 1) or, from
/// `inputs` on, the outputs of the members before it (inputs + k: member k's).
struct FusedMember {
  const OpDef* op = nullptr;          ///< an op with a pointwise form
  Attrs attrs = {};                   ///< as it was dispatched
  std::vector<int64_t> sources = {};  ///< where each of its inputs comes from
};

/// The op every fused node runs: "fused_elementwise", its chain in its attrs (fused_attrs), so
/// a fused graph saves and loads as any other.
const OpDef& fused_elementwise_op();

/// A fused node's attrs: its members in order, which members' outputs are the node's outputs
/// (in order), the shape every member makes, the node's input count, and the chain's FLOPs.
Attrs fused_attrs(const std::vector<FusedMember>& members, const std::vector<int64_t>& outputs,
                  const Shape& shape, int64_t inputs, double flops);

/// The fused op of `base` — "matmul_add", "linear_add" or "conv2d_add" for matmul, linear and
/// conv2d; nullptr for any other op. Its inputs are base's and then `other`, its attrs base's:
/// out = base(inputs) + other, where other has the output's shape and dtype (any strides).
const OpDef* epilogue_add_op(const OpDef& base);

/// For a fused product: the index of its added input, whose bytes its output may be given when
/// that input dies there (its kernel reads each element before writing over it); else -1.
int added_input(const OpDef& op);

}  // namespace dlf
