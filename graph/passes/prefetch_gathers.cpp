// Gather prefetch: ZeRO-3's parameter gathers start a block ahead, as FSDP's forward prefetch
// does eagerly. A step is captured at its first run, whose forward cannot prefetch (FSDP learns
// the blocks' order by running them), so each block's gather sits just before the block's first
// read and its transfer is all exposed; moved up to where the block before it starts, it
// overlaps that block's compute. Backward's gathers, which the capture already prefetched, have
// compute between them and their first read, and stay.
#include <dlf/graph/passes.h>

#include <algorithm>

namespace dlf::graph {
namespace {

bool async_gather(const Node& n) {
  return n.op->collective && n.op->name == "allgather" && n.attrs.b("async");
}

// Neither a view nor a collective (a wait included): a node that takes compute time.
bool computes(const Node& n) { return !n.op->view && !n.op->collective; }

// The first node after `n` that reads n's output other than through a view or a wait: where what
// it gathers is first used. nodes.size() when nothing does.
size_t first_use(const Graph& g, size_t n) {
  const int buffer = g.values[size_t(g.nodes[n].outputs[0])].buffer;
  for (size_t m = n + 1; m < g.nodes.size(); ++m) {
    const Node& node = g.nodes[m];
    if (!computes(node)) continue;
    for (int v : node.inputs)
      if (v >= 0 && g.values[size_t(v)].buffer == buffer) return m;
  }
  return g.nodes.size();
}

// The earliest index gather `n` may run at: after what makes its inputs, after any in-place
// write of their bytes, and after the collectives of its group before it (waits aside): the
// group's ranks meet in one order whatever graph each runs.
size_t earliest(const Graph& g, size_t n) {
  std::vector<int> read;
  for (int v : g.nodes[n].inputs)
    if (v >= 0) read.push_back(g.values[size_t(v)].buffer);
  const int64_t group = g.nodes[n].attrs.i("group");
  for (size_t m = n; m-- > 0;) {
    const Node& node = g.nodes[m];
    if (node.op->collective && node.op->name != "collective_wait" && node.attrs.i("group") == group)
      return m + 1;
    for (int v : node.outputs)
      if (std::find(read.begin(), read.end(), g.values[size_t(v)].buffer) != read.end())
        return m + 1;
    for (int b : g.written_in_place_by(node))
      if (std::find(read.begin(), read.end(), b) != read.end()) return m + 1;
  }
  return 0;
}

}  // namespace

int prefetch_gathers(Graph& g) {
  const size_t count = g.nodes.size();
  std::vector<size_t> move_to(count, count);  // a moved gather's new place: before that node
  struct Last {
    int64_t group;
    size_t first_use;
    int source;  // the buffer it gathers from
  };
  std::vector<Last> last;  // by group: its last gather so far
  int moved = 0;
  for (size_t n = 0; n < count; ++n) {
    if (!async_gather(g.nodes[n])) continue;
    const int64_t group = g.nodes[n].attrs.i("group");
    const int source = g.values[size_t(g.nodes[n].inputs[0])].buffer;
    const size_t use = first_use(g, n);
    auto previous =
        std::find_if(last.begin(), last.end(), [&](const Last& l) { return l.group == group; });
    bool prefetched = false;  // compute already runs between it and its first use
    for (size_t m = n + 1; m < use && !prefetched; ++m) prefetched = computes(g.nodes[m]);
    // Not beside a gather of the same bytes (backward's first, of the block forward ended with):
    // the parameters would be whole twice, which releasing them after forward saved.
    if (previous != last.end() && !prefetched && previous->source != source) {
      const size_t at = std::max(previous->first_use, earliest(g, n));
      if (at < n) {
        move_to[n] = at;
        ++moved;
      }
    }
    if (previous == last.end()) {
      last.push_back({group, use, source});
    } else {
      *previous = {group, use, source};
    }
  }
  if (moved == 0) return 0;
  std::vector<std::vector<size_t>> moved_before(count);  // in their own order
  for (size_t n = 0; n < count; ++n)
    if (move_to[n] < count) moved_before[move_to[n]].push_back(n);
  std::vector<Node> order;
  order.reserve(count);
  for (size_t n = 0; n < count; ++n) {
    for (size_t m : moved_before[n]) order.push_back(std::move(g.nodes[m]));
    if (move_to[n] == count) order.push_back(std::move(g.nodes[n]));
  }
  g.nodes = std::move(order);
  g.compact();
  return moved;
}

}  // namespace dlf::graph
