// What the graph tests share: a step over tensors, and a graph's ops by name.
#pragma once
#include <functional>
#include <string>
#include <vector>

#include <dlf/dlf.h>

namespace dlf::test {

/// A step as graph::capture takes it.
using Step = std::function<std::vector<Tensor>(const std::vector<Tensor>&)>;

/// The graph's nodes by op name, in order; a fused element-wise node as "[its,ops]".
inline std::vector<std::string> op_names(const graph::Graph& g) {
  std::vector<std::string> names;
  for (const graph::Node& n : g.nodes) {
    const std::string chain = graph::fused_chain(n);
    names.push_back(chain.empty() ? n.op->name : '[' + chain + ']');
  }
  return names;
}

}  // namespace dlf::test
