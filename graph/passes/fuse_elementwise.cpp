// Element-wise fusion: nodes of ops with a pointwise form that make f32 values of one shape and
// layout, each reading what an earlier one made, become one fused_elementwise node — wherever
// the chain is (forward's bias + GELU, GELU's backward and the gradient sums after it, residual
// adds, scaling). The fused node runs where its last member ran, so a chain stays open only
// while nothing outside it reads what it made and nothing writes in place what it read.
#include <dlf/core/ops/fused.h>
#include <dlf/graph/passes.h>

#include <algorithm>
#include <set>

#include "graph/meta_of.h"

namespace dlf::graph {
namespace {

// Dense and non-overlapping at offset 0, in any dim order (row-major, channels last).
bool dense(const Value& v) {
  std::vector<std::pair<int64_t, int64_t>> dims;  // (stride, size), size-1 dims left out
  for (size_t d = 0; d < v.shape.size(); ++d)
    if (v.shape[d] != 1) dims.emplace_back(v.strides[d], v.shape[d]);
  std::sort(dims.begin(), dims.end(), std::greater<>());
  int64_t expected = 1;
  for (size_t d = dims.size(); d-- > 0;) {
    if (dims[d].first != expected) return false;
    expected *= dims[d].second;
  }
  return v.offset == 0;
}

bool fusible(const Graph& g, const Node& node) {
  const OpDef& op = *node.op;
  if (!op.pointwise || op.view || op.inplace >= 0 || op.redraw || node.outputs.size() != 1)
    return false;
  const Value& out = g.values[node.outputs[0]];
  if (out.dtype != DType::f32 || !dense(out)) return false;
  for (int v : node.inputs)
    if (v < 0 || g.values[v].dtype != DType::f32) return false;
  return true;
}

struct Group {
  std::vector<int> members;  // node indices, in order
  std::set<int> reads;       // buffers its members read
  bool open = true;
};

// Autograd keeps what backward reads as tensors of their own, which capture records as values
// of the same buffer without a producer: each such value that views a node's output as the node
// made it stands for that output (a node that made the buffer: not one writing in place bytes
// that existed before it, as the optimizer's update writes a parameter read earlier).
std::vector<int> canonical_values(const Graph& g) {
  const std::vector<int> first = g.buffer_first_def();
  std::vector<int> canon(g.values.size());
  for (size_t v = 0; v < canon.size(); ++v) {
    canon[v] = int(v);
    const Value& value = g.values[v];
    const int p = first[value.buffer];
    if (value.producer >= 0 || p < 0 || g.nodes[p].outputs.size() != 1 ||
        g.nodes[p].op->inplace >= 0)
      continue;
    const int made = g.nodes[p].outputs[0];
    const Value& m = g.values[made];
    if (m.buffer == value.buffer && m.shape == value.shape && m.strides == value.strides &&
        m.offset == value.offset && m.dtype == value.dtype)
      canon[v] = made;
  }
  return canon;
}

// The fused node standing for `members` (two or more, in order). `outside` says, per buffer,
// whether something other than the group reads it or it escapes the step.
Node fuse(const Graph& g, const std::vector<int>& members, const std::vector<int>& canon,
          const std::vector<std::vector<int>>& buffer_readers, const std::vector<bool>& escapes) {
  std::vector<int> index_of(g.values.size(), -1);  // a member's output -> inputs + its index
  std::vector<int> inputs;
  const std::set<int> in_group(members.begin(), members.end());
  for (int n : members)
    for (int v : g.nodes[n].inputs)
      if (!in_group.count(g.values[canon[v]].producer) &&
          std::find(inputs.begin(), inputs.end(), canon[v]) == inputs.end())
        inputs.push_back(canon[v]);
  for (size_t i = 0; i < inputs.size(); ++i) index_of[inputs[i]] = int(i);
  std::vector<FusedMember> chain;
  std::vector<int64_t> outputs;
  std::vector<int> output_values;
  double flops = 0;
  for (size_t k = 0; k < members.size(); ++k) {
    const Node& node = g.nodes[members[k]];
    FusedMember m{.op = node.op, .attrs = node.attrs, .sources = {}};
    std::vector<Tensor> in;
    for (int v : node.inputs) {
      m.sources.push_back(index_of[canon[v]]);
      in.push_back(meta_of(g.values[v]));
    }
    const int out = node.outputs[0];
    const Tensor made[] = {meta_of(g.values[out])};
    flops += op_cost(*node.op, in, node.attrs, made).flops;
    index_of[out] = int(inputs.size() + k);
    const int b = g.values[out].buffer;
    bool read_outside = escapes[b];
    for (int r : buffer_readers[b]) read_outside = read_outside || !in_group.count(r);
    if (read_outside) {
      outputs.push_back(int64_t(k));
      output_values.push_back(out);
    }
    chain.push_back(std::move(m));
  }
  const Value& shape_of = g.values[g.nodes[members[0]].outputs[0]];
  return {.op = &fused_elementwise_op(),
          .attrs = fused_attrs(chain, outputs, shape_of.shape, int64_t(inputs.size()), flops),
          .inputs = inputs,
          .outputs = output_values};
}

}  // namespace

int fuse_elementwise(Graph& g) {
  const int count = int(g.nodes.size());
  std::vector<int> group_of(g.nodes.size(), -1);
  std::vector<Group> groups;
  const std::vector<int> canon = canonical_values(g);
  const std::vector<int> first = g.buffer_first_def();
  const auto layout_of = [&](int n) -> const Value& { return g.values[g.nodes[n].outputs[0]]; };
  for (int n = 0; n < count; ++n) {
    const Node& node = g.nodes[n];
    const bool joins = fusible(g, node);
    std::set<int> from, close;  // open groups whose values the node reads: to join, to end
    for (int v : node.inputs) {
      if (v < 0) continue;
      const int p = first[g.values[v].buffer];  // the writer of the bytes it reads
      if (p < 0 || group_of[p] < 0 || !groups[group_of[p]].open) continue;
      // A member's output as it made it can be joined; another view of its bytes cannot.
      (g.values[canon[v]].producer == p ? from : close).insert(group_of[p]);
    }
    for (int G : close) {
      groups[G].open = false;
      from.erase(G);
    }
    int into = -1;
    for (int G : from) {
      const Value& a = layout_of(groups[G].members[0]);
      const Value& b = joins ? layout_of(n) : a;
      if (!joins || a.shape != b.shape || a.strides != b.strides) {
        groups[G].open = false;  // read from outside: it runs before this node
      } else if (into < 0) {
        into = G;
      } else {  // the node joins two chains: one group, its members still in order
        for (int m : groups[G].members) group_of[m] = into;
        groups[into].members.insert(groups[into].members.end(), groups[G].members.begin(),
                                    groups[G].members.end());
        std::sort(groups[into].members.begin(), groups[into].members.end());
        groups[into].reads.insert(groups[G].reads.begin(), groups[G].reads.end());
        groups[G] = {.members = {}, .reads = {}, .open = false};
      }
    }
    if (joins) {
      if (into < 0) {
        into = int(groups.size());
        groups.emplace_back();
      }
      groups[into].members.push_back(n);
      group_of[n] = into;
      for (int v : node.inputs) groups[into].reads.insert(g.values[v].buffer);
    } else {
      // Bytes a chain read change here: it must have run before.
      for (int written : g.written_in_place_by(node))
        for (Group& G : groups)
          if (G.open && G.reads.count(written)) G.open = false;
    }
  }

  std::vector<std::vector<int>> buffer_readers(g.buffers.size());
  for (int n = 0; n < count; ++n)
    for (int v : g.nodes[n].inputs)
      if (v >= 0) buffer_readers[g.values[v].buffer].push_back(n);
  std::vector<bool> escapes(g.buffers.size(), false);
  for (int v : g.outputs) escapes[g.values[v].buffer] = true;
  for (const GradBinding& b : g.grads) escapes[g.values[b.value].buffer] = true;

  std::vector<int> fused_at(g.nodes.size(), -1);  // the group whose fused node runs here
  std::vector<bool> absorbed(g.nodes.size(), false);
  for (size_t G = 0; G < groups.size(); ++G) {
    if (groups[G].members.size() < 2) continue;
    for (int m : groups[G].members) absorbed[m] = true;
    fused_at[groups[G].members.back()] = int(G);
  }
  std::vector<Node> nodes;
  for (int n = 0; n < count; ++n) {
    if (fused_at[n] >= 0) {
      nodes.push_back(fuse(g, groups[fused_at[n]].members, canon, buffer_readers, escapes));
    } else if (!absorbed[n]) {
      nodes.push_back(std::move(g.nodes[n]));
    }
  }
  const int removed = count - int(nodes.size());
  g.nodes = std::move(nodes);
  g.compact();
  return removed;
}

std::string fused_chain(const Node& node) {
  return node.op == &fused_elementwise_op() ? node.attrs.s("ops") : std::string();
}

}  // namespace dlf::graph
