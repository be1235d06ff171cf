// Rematerialisation (the idea of AOTAutograd's min-cut partitioner, as a local rule): a value
// made by a cheap, memory-bound op and read again long after — forward's activations that
// backward reads — is made again just before that late read from inputs that are alive there
// anyway, so its bytes are free in between, where a training step's memory peaks.
#include <dlf/graph/passes.h>

#include <algorithm>
#include <map>

#include "graph/meta_of.h"

namespace dlf::graph {
namespace {

constexpr int kGap = 16;  // nodes between two reads that make the later one "late"

// Whether recomputing `node` costs little next to the bytes it moves.
bool cheap(const Graph& g, const Node& node) {
  if (node.op->view || node.op->inplace >= 0 || node.op->redraw || node.op->collective ||
      node.outputs.empty())
    return false;
  std::vector<Tensor> in, out;
  for (int v : node.inputs) in.push_back(v >= 0 ? meta_of(g.values[v]) : Tensor());
  for (int v : node.outputs) out.push_back(meta_of(g.values[v]));
  return !costly_to_recompute(*node.op, in, node.attrs, out);
}

}  // namespace

int rematerialize(Graph& g) {
  const std::vector<int> last = g.buffer_last_use();
  std::vector<std::vector<int>> readers(g.values.size());
  const std::vector<bool> written_in_place = g.buffers_written_in_place();
  std::vector<std::vector<int>> writes(g.buffers.size());  // the nodes writing each in place
  for (size_t n = 0; n < g.nodes.size(); ++n)
    for (int b : g.written_in_place_by(g.nodes[n])) writes[size_t(b)].push_back(int(n));
  // Whether nothing writes buffer b in place after node `from` and before node `to`: a value
  // read from it at `from` reads the same at `to` (the optimizer's update of a parameter comes
  // after the backward reads that make forward's values again).
  auto unchanged = [&](int b, int from, int to) {
    return std::none_of(writes[b].begin(), writes[b].end(),
                        [&](int w) { return w > from && w < to; });
  };
  for (size_t n = 0; n < g.nodes.size(); ++n) {
    for (int v : g.nodes[n].inputs)
      if (v >= 0 && (readers[v].empty() || readers[v].back() != int(n)))
        readers[v].push_back(int(n));
  }
  // Before which node to make which node again.
  std::map<int, std::vector<int>> again;
  for (size_t n = 0; n < g.nodes.size(); ++n) {
    const Node& node = g.nodes[n];
    bool owned = true;  // its outputs are intermediates that nothing writes in place
    for (int v : node.outputs) {
      const int b = g.values[v].buffer;
      owned = owned && g.buffers[b].kind == BufferKind::arena && !written_in_place[b];
    }
    if (!owned || !cheap(g, node)) continue;
    std::vector<int> reads;
    for (int v : node.outputs) reads.insert(reads.end(), readers[v].begin(), readers[v].end());
    std::sort(reads.begin(), reads.end());
    reads.erase(std::unique(reads.begin(), reads.end()), reads.end());
    for (size_t k = 1; k < reads.size(); ++k) {
      if (reads[k] - reads[k - 1] <= kGap) continue;
      bool inputs_alive = true;  // and as they were at node n
      for (int v : node.inputs) {
        if (v < 0) continue;
        const int b = g.values[v].buffer;
        inputs_alive = inputs_alive && unchanged(b, int(n), reads[k]) &&
                       (g.buffers[b].kind != BufferKind::arena || last[b] >= reads[k]);
      }
      if (inputs_alive) again[reads[k]].push_back(int(n));
    }
  }
  if (again.empty()) return 0;

  std::vector<int> current(g.values.size());  // the latest value standing for each value
  for (size_t v = 0; v < current.size(); ++v) current[v] = int(v);
  std::vector<Node> nodes;
  int made = 0;
  for (size_t n = 0; n < g.nodes.size(); ++n) {
    for (int original : again[int(n)]) {
      Node clone = g.nodes[original];
      for (int& v : clone.inputs)
        if (v >= 0) v = current[v];
      for (int& v : clone.outputs) {
        Value value = g.values[v];
        Buffer buffer = g.buffers[value.buffer];
        value.buffer = int(g.buffers.size());
        g.buffers.push_back(buffer);
        value.producer = int(nodes.size());
        const int fresh = int(g.values.size());
        g.values.push_back(value);
        current[v] = fresh;
        current.push_back(fresh);
        v = fresh;
      }
      nodes.push_back(std::move(clone));
      ++made;
    }
    Node node = g.nodes[n];  // a copy: a later clone may copy it again
    for (int& v : node.inputs)
      if (v >= 0) v = current[v];
    nodes.push_back(std::move(node));
  }
  g.nodes = std::move(nodes);
  g.compact();
  return made;
}

}  // namespace dlf::graph
