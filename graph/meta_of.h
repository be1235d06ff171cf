// A value's shape and dtype as a meta tensor: what passes hand to an op's infer or cost.
#pragma once
#include <dlf/graph/graph.h>

namespace dlf::graph {

inline Tensor meta_of(const Value& v) { return Tensor::empty(v.shape, v.dtype, kMeta); }

}  // namespace dlf::graph
