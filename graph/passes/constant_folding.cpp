// Constant folding: what a step computes from no input at all — factories (full, arange) and
// pure ops over their results (a causal mask, a timestep embedding's frequencies, backward's
// seed of ones) — is computed once, when the pass runs, and becomes external bytes of the graph.
#include <dlf/graph/passes.h>

#include <map>

namespace dlf::graph {

int fold_constants(Graph& g) {
  std::vector<bool> constant(g.values.size(), false);
  std::vector<bool> folded(g.nodes.size(), false);
  const std::vector<bool> written_in_place = g.buffers_written_in_place();
  for (size_t n = 0; n < g.nodes.size(); ++n) {
    const Node& node = g.nodes[n];
    bool pure = node.op->inplace < 0 && node.op->also_writes.empty() && !node.op->redraw &&
                !node.op->collective;
    for (int v : node.inputs) pure = pure && (v < 0 || constant[v]);
    for (int v : node.outputs) {
      const Buffer& b = g.buffers[g.values[v].buffer];
      pure = pure && !written_in_place[g.values[v].buffer] && b.kind == BufferKind::arena;
    }
    if (!pure) continue;
    folded[n] = true;
    for (int v : node.outputs) constant[v] = true;
  }
  // Run the folded nodes once, in order, into bytes of their own.
  std::vector<Tensor> values(g.values.size());
  std::map<int, std::shared_ptr<Storage>> bytes;  // by buffer
  int removed = 0;
  for (size_t n = 0; n < g.nodes.size(); ++n) {
    if (!folded[n]) continue;
    const Node& node = g.nodes[n];
    std::vector<Tensor> in, out;
    for (int v : node.inputs) in.push_back(v >= 0 ? values[v] : Tensor());
    if (!node.op->view) {
      for (int v : node.outputs) {
        const Value& value = g.values[v];
        const Buffer& b = g.buffers[value.buffer];
        auto& storage = bytes[value.buffer];
        if (!storage) storage = std::make_shared<Storage>(b.nbytes, b.device);
        out.emplace_back(storage, value.shape, value.strides, value.offset, value.dtype);
      }
    }
    launch_op(*node.op, in, node.attrs, out);
    for (size_t i = 0; i < node.outputs.size(); ++i) values[node.outputs[i]] = out[i];
    ++removed;
  }
  if (removed == 0) return 0;
  // Their values become reads of external bytes; the nodes go.
  for (auto& [b, storage] : bytes) {
    g.buffers[b].kind = BufferKind::external;
    g.buffers[b].storage = storage;
  }
  std::vector<Node> kept;
  for (size_t n = 0; n < g.nodes.size(); ++n) {
    if (folded[n]) {
      for (int v : g.nodes[n].outputs) g.values[v].producer = -1;
      // A folded view's value lives in its input's (now external) buffer, strides as captured.
      if (g.nodes[n].op->view)
        for (int v : g.nodes[n].outputs) g.values[v].buffer = g.values[g.nodes[n].inputs[0]].buffer;
    } else {
      kept.push_back(std::move(g.nodes[n]));
    }
  }
  g.nodes = std::move(kept);
  g.compact();
  return removed;
}

}  // namespace dlf::graph
