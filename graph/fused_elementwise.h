// The fused element-wise op: a chain of element-wise ops (their OpDef::pointwise) run as one
// loop over tiles of the output, each input read once, each output written once, the values in
// between kept in a per-thread scratch that stays in cache.
#pragma once
#include <vector>

#include <dlf/core/op.h>

namespace dlf::graph {

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

}  // namespace dlf::graph
