// Dead-code elimination, walking the nodes backwards from what the step must leave behind.
#include <dlf/graph/passes.h>

namespace dlf::graph {

int eliminate_dead_code(Graph& g) {
  std::vector<bool> needed(g.values.size(), false);
  for (int v : g.outputs) needed[v] = true;
  for (const GradBinding& b : g.grads) needed[b.value] = true;
  // Buffers read as they are (a value no node made, over bytes a node wrote): what writes them
  // is needed, whatever value it made.
  std::vector<bool> read_as_is(g.buffers.size(), false);
  std::vector<Node> kept;
  int removed = 0;
  for (size_t n = g.nodes.size(); n-- > 0;) {
    Node& node = g.nodes[n];
    // An in-place write is kept: a view taken before it may be read after it, a use SSA
    // values do not show. So is any kernel writing bytes the step does not own.
    bool live = node.op->inplace >= 0 || !node.op->also_writes.empty() || node.op->collective;
    for (int v : node.outputs) {
      live = live || needed[v] || read_as_is[g.values[v].buffer] ||
             (!node.op->view && g.buffers[g.values[v].buffer].kind != BufferKind::arena &&
              g.buffers[g.values[v].buffer].kind != BufferKind::output);
    }
    if (!live) {
      ++removed;
      continue;
    }
    for (int v : node.inputs) {
      if (v < 0) continue;
      needed[v] = true;
      if (g.values[v].producer < 0) read_as_is[g.values[v].buffer] = true;
    }
    kept.push_back(std::move(node));
  }
  g.nodes.assign(std::make_move_iterator(kept.rbegin()), std::make_move_iterator(kept.rend()));
  g.compact();
  return removed;
}

}  // namespace dlf::graph
