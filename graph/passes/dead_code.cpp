// Dead-code elimination, walking the nodes backwards from what the step must leave behind.
#include <dlf/graph/passes.h>

namespace dlf::graph {

int eliminate_dead_code(Graph& g) {
  std::vector<bool> needed(g.values.size(), false);
  for (int v : g.outputs) needed[v] = true;
  for (const GradBinding& b : g.grads) needed[b.value] = true;
  std::vector<Node> kept;
  int removed = 0;
  for (size_t n = g.nodes.size(); n-- > 0;) {
    Node& node = g.nodes[n];
    // An in-place write is kept: a view taken before it may be read after it, a use SSA
    // values do not show. So is any kernel writing bytes the step does not own.
    bool live = node.op->inplace >= 0 || !node.op->also_writes.empty();
    for (int v : node.outputs) {
      live = live || needed[v] ||
             (!node.op->view && g.buffers[g.values[v].buffer].kind != BufferKind::arena &&
              g.buffers[g.values[v].buffer].kind != BufferKind::output);
    }
    if (!live) {
      ++removed;
      continue;
    }
    for (int v : node.inputs)
      if (v >= 0) needed[v] = true;
    kept.push_back(std::move(node));
  }
  g.nodes.assign(std::make_move_iterator(kept.rbegin()), std::make_move_iterator(kept.rend()));
  g.compact();
  return removed;
}

}  // namespace dlf::graph
