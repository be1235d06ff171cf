// Epilogue fusion: a matmul, linear or conv2d whose output only an add reads,
// beside another tensor of the same shape (a residual connection; a gradient summed from two
// uses), becomes one node of its fused op, at the product or at the add: the product's kernel
// adds the other tensor as it writes (oneDNN's binary or sum post-op), and the product alone
// never reaches memory. Bias and activation are already linear's own epilogue (nn::Linear and
// nn::MLP ask for them); this pass adds what only the graph sees: the add that follows.
#include <dlf/core/ops/fused.h>
#include <dlf/graph/passes.h>

#include <algorithm>

namespace dlf::graph {
namespace {

// The fused node that runs in place of a product and the add after it.
struct Fusion {
  int product = -1;  // the matmul, linear or conv2d node
  int add = -1;      // the add that reads it
  int other = -1;    // the add's other input
};

class EpilogueFinder {
 public:
  explicit EpilogueFinder(const Graph& g)
      : g_(g),
        readers_(g.buffers.size()),
        escapes_(g.buffers.size(), false),
        first_(g.buffer_first_def()),
        last_(g.buffer_last_use()) {
    for (size_t n = 0; n < g.nodes.size(); ++n)
      for (int v : g.nodes[n].inputs)
        if (v >= 0) readers_[g.values[v].buffer].push_back(int(n));
    for (int v : g.outputs) escapes_[g.values[v].buffer] = true;
    for (const GradBinding& b : g.grads) escapes_[g.values[b.value].buffer] = true;
  }

  // Where the fused node of product `p` and the add `a` (reading the product as `v`, `r` the
  // other) runs — at the product when `r` is there already, else at the add when that keeps
  // nothing the product reads alive longer — or -1 when they do not fuse.
  int position(int p, int a, int v, int r) const {
    const Node& product = g_.nodes[p];
    if (product.outputs.size() != 1 || product.outputs[0] != v || r < 0) return -1;
    const Value &made = g_.values[v], &added = g_.values[r];
    const Value& sum = g_.values[g_.nodes[a].outputs[0]];
    if (made.shape != sum.shape || added.shape != sum.shape || made.strides != sum.strides ||
        made.dtype != sum.dtype || added.dtype != sum.dtype || added.buffer == made.buffer)
      return -1;
    // Nothing else reads the product (a view of it, or autograd's saved copy, included).
    const std::vector<int>& readers = readers_[made.buffer];
    if (escapes_[made.buffer] ||
        std::any_of(readers.begin(), readers.end(), [&](int n) { return n != a; }))
      return -1;
    const int made_at = added.producer >= 0 ? added.producer : first_[added.buffer];
    if (made_at < p && !written_between(added.buffer, p, a)) return p;
    // At the add, the product reads its inputs later: as they were, and while alive anyway
    // (the tied embedding's gradient product, read by an add at backward's end, would keep
    // the logits' gradient alive to there).
    for (int in : product.inputs) {
      if (in < 0) continue;
      const int b = g_.values[in].buffer;
      const BufferKind kind = g_.buffers[b].kind;
      const bool intermediate = kind == BufferKind::arena || kind == BufferKind::output;
      if (written_between(b, p, a) || (intermediate && last_[b] < a)) return -1;
    }
    return a;
  }

 private:
  bool written_between(int buffer, int from, int to) const {
    for (int n = from + 1; n < to; ++n) {
      const std::vector<int> written = g_.written_in_place_by(g_.nodes[n]);
      if (std::find(written.begin(), written.end(), buffer) != written.end()) return true;
    }
    return false;
  }

  const Graph& g_;
  std::vector<std::vector<int>> readers_;  // per buffer, the nodes reading any value of it
  std::vector<bool> escapes_;              // per buffer: a result or a gradient lives there
  std::vector<int> first_, last_;          // per buffer, its first writer and last use
};

}  // namespace

int fuse_epilogues(Graph& g) {
  const OpDef& add = find_op("add");
  const EpilogueFinder finder(g);
  std::vector<Fusion> runs_at(g.nodes.size());  // per node: the fused node that runs there
  std::vector<bool> fused(g.nodes.size(), false);
  for (int a = 0; a < int(g.nodes.size()); ++a) {
    const Node& node = g.nodes[a];
    if (node.op != &add || node.inputs.size() != 2) continue;
    for (int side = 0; side < 2; ++side) {
      const int v = node.inputs[side], r = node.inputs[1 - side];
      const int p = v < 0 ? -1 : g.values[v].producer;
      if (p < 0 || fused[p] || epilogue_add_op(*g.nodes[p].op) == nullptr) continue;
      const int at = finder.position(p, a, v, r);
      if (at < 0) continue;
      runs_at[at] = {.product = p, .add = a, .other = r};
      fused[p] = fused[a] = true;
      break;
    }
  }

  std::vector<Node> nodes;
  for (int n = 0; n < int(g.nodes.size()); ++n) {
    const Fusion& f = runs_at[n];
    if (f.product < 0) {
      if (!fused[n]) nodes.push_back(std::move(g.nodes[n]));
      continue;
    }
    Node& product = g.nodes[f.product];
    Node node{.op = epilogue_add_op(*product.op),
              .attrs = std::move(product.attrs),
              .inputs = std::move(product.inputs),
              .outputs = std::move(g.nodes[f.add].outputs)};
    node.inputs.push_back(f.other);
    nodes.push_back(std::move(node));
  }
  const int removed = int(g.nodes.size() - nodes.size());
  g.nodes = std::move(nodes);
  g.compact();
  return removed;
}

}  // namespace dlf::graph
