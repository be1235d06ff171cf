// The graph IR's own bookkeeping: liveness of buffers and compaction after passes.
#include <dlf/graph/graph.h>

#include <algorithm>
#include <sstream>

namespace dlf::graph {

std::string kind_name(BufferKind kind) {
  switch (kind) {
    case BufferKind::external:
      return "external";
    case BufferKind::argument:
      return "argument";
    case BufferKind::arena:
      return "arena";
    case BufferKind::output:
      return "output";
  }
  return "?";
}

std::string Graph::summary() const {
  const auto views =
      std::count_if(nodes.begin(), nodes.end(), [](const Node& n) { return bool(n.op->view); });
  std::ostringstream os;
  os << nodes.size() << " nodes (" << views << " views), " << values.size() << " values, "
     << buffers.size() << " buffers";
  if (arena_bytes > 0) os << ", arena " << double(arena_bytes) / double(1 << 20) << " MiB";
  return os.str();
}

std::vector<int> Graph::buffer_last_use() const {
  std::vector<int> last(buffers.size(), -1);
  for (size_t n = 0; n < nodes.size(); ++n) {
    for (int v : nodes[n].inputs)
      if (v >= 0) last[values[v].buffer] = int(n);
    for (int v : nodes[n].outputs)
      last[values[v].buffer] = std::max(last[values[v].buffer], int(n));
  }
  const int end = int(nodes.size());
  for (int v : outputs) last[values[v].buffer] = end;
  for (const GradBinding& g : grads) last[values[g.value].buffer] = end;
  return last;
}

std::vector<int> Graph::buffer_first_def() const {
  std::vector<int> first(buffers.size(), -1);
  for (size_t n = nodes.size(); n-- > 0;)
    for (int v : nodes[n].outputs) first[values[v].buffer] = int(n);
  return first;
}

std::vector<int> Graph::written_in_place_by(const Node& node) const {
  std::vector<int> written;
  if (node.op->inplace >= 0) written.push_back(values[node.outputs[0]].buffer);
  for (int i : node.op->also_writes)
    if (node.inputs[size_t(i)] >= 0) written.push_back(values[node.inputs[size_t(i)]].buffer);
  return written;
}

std::vector<bool> Graph::buffers_written_in_place() const {
  std::vector<bool> written(buffers.size(), false);
  for (const Node& node : nodes)
    for (int b : written_in_place_by(node)) written[size_t(b)] = true;
  return written;
}

void Graph::compact() {
  // A view or an in-place op's outputs live in its input's buffer: a pass that gave it another
  // input moved them too.
  for (const Node& node : nodes) {
    if (node.op->view) {
      for (int v : node.outputs) values[v].buffer = values[node.inputs[0]].buffer;
    } else if (node.op->inplace >= 0) {
      values[node.outputs[0]].buffer = values[node.inputs[size_t(node.op->inplace)]].buffer;
    }
  }
  std::vector<int> value_map(values.size(), -1), buffer_map(buffers.size(), -1);
  std::vector<Value> kept_values;
  std::vector<Buffer> kept_buffers;
  auto keep = [&](int v) {
    if (v < 0) return -1;
    if (value_map[v] < 0) {
      Value value = values[v];
      int& b = buffer_map[value.buffer];
      if (b < 0) {
        b = int(kept_buffers.size());
        kept_buffers.push_back(buffers[value.buffer]);
      }
      value.buffer = b;
      value_map[v] = int(kept_values.size());
      kept_values.push_back(std::move(value));
    }
    return value_map[v];
  };
  for (int& v : arguments) v = keep(v);
  for (Node& node : nodes) {
    for (int& v : node.inputs) v = keep(v);
    for (int& v : node.outputs) v = keep(v);
  }
  for (int& v : outputs) v = keep(v);
  for (GradBinding& g : grads) {
    g.param_value = keep(g.param_value);
    g.value = keep(g.value);
  }
  // A value's producer is a node index; nodes kept their order, so recompute from outputs.
  for (Value& v : kept_values) v.producer = -1;
  for (size_t n = 0; n < nodes.size(); ++n)
    for (int v : nodes[n].outputs) kept_values[v].producer = int(n);
  values = std::move(kept_values);
  buffers = std::move(kept_buffers);
}

}  // namespace dlf::graph
