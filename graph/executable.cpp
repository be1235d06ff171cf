// The executor: the arena is one allocation per run; each buffer becomes a borrowed storage
// into it (or the step's input, or external bytes), each value a tensor on its buffer, each
// node one launch_op.
#include <dlf/graph/executable.h>
#include <dlf/graph/memory_plan.h>

namespace dlf::graph {

Executable::Executable(Graph graph) : graph_(std::move(graph)) {
  plan_memory(graph_);
  for (const Buffer& b : graph_.buffers) {
    if (b.kind == BufferKind::arena || b.kind == BufferKind::output) {
      arena_device_ = b.device;
      break;
    }
  }
}

bool Executable::accepts(const std::vector<Tensor>& inputs) const {
  if (inputs.size() != graph_.arguments.size()) return false;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const Value& v = graph_.values[graph_.arguments[i]];
    const Tensor& t = inputs[i];
    if (!t.defined() || t.shape() != v.shape || t.strides() != v.strides || t.dtype() != v.dtype ||
        t.device() != graph_.buffers[v.buffer].device)
      return false;
  }
  return true;
}

std::vector<Tensor> Executable::run(const std::vector<Tensor>& inputs) const {
  DLF_CHECK(accepts(inputs),
            "graph: these inputs differ from the captured ones in count, shape, strides, dtype "
            "or device; capture again for them (graph::Compiled does)");
  for (const GradBinding& b : graph_.grads)
    DLF_CHECK(!b.param.grad().defined(), "graph: a parameter ", shape_str(b.param.shape()),
              " already has a gradient; clear gradients (zero_grad) before running the step");
  const Graph& g = graph_;
  const auto arena = std::make_shared<Storage>(g.arena_bytes, arena_device_);
  std::vector<std::shared_ptr<Storage>> storage(g.buffers.size());
  for (size_t b = 0; b < g.buffers.size(); ++b) {
    const Buffer& buf = g.buffers[b];
    switch (buf.kind) {
      case BufferKind::external:
        storage[b] = buf.storage;
        break;
      case BufferKind::argument:
        storage[b] = inputs[size_t(buf.argument)].storage();
        break;
      case BufferKind::arena:
      case BufferKind::output: {
        char* base = static_cast<char*>(arena->data());
        storage[b] = std::make_shared<Storage>(base ? base + buf.offset : nullptr, buf.nbytes,
                                               arena, buf.device);
        break;
      }
    }
  }
  std::vector<Tensor> values(g.values.size());
  auto on_buffer = [&](int v) {
    const Value& value = g.values[v];
    return Tensor(storage[value.buffer], value.shape, value.strides, value.offset, value.dtype);
  };
  for (size_t i = 0; i < g.arguments.size(); ++i) values[g.arguments[i]] = inputs[i];
  for (size_t v = 0; v < g.values.size(); ++v)
    if (g.values[v].producer < 0 && !values[v].defined()) values[v] = on_buffer(int(v));

  std::vector<Tensor> in, out;
  Attrs drawn;
  for (size_t n = 0; n < g.nodes.size(); ++n) {
    const Node& node = g.nodes[n];
    const OpDef& op = *node.op;
    in.clear();
    for (int v : node.inputs) in.push_back(v >= 0 ? values[v] : Tensor());
    out.clear();
    if (op.inplace >= 0) {
      out.push_back(in[size_t(op.inplace)]);
    } else if (!op.view) {
      for (int v : node.outputs) out.push_back(on_buffer(v));
    }
    const Attrs* attrs = &node.attrs;
    if (op.redraw) {
      drawn = node.attrs;
      op.redraw(in, drawn);
      attrs = &drawn;
    }
    launch_op(op, in, *attrs, out);
    for (size_t i = 0; i < node.outputs.size(); ++i) values[node.outputs[i]] = out[i];
  }
  for (const GradBinding& b : g.grads) b.param.set_grad(values[b.value]);
  std::vector<Tensor> results;
  for (int v : g.outputs) results.push_back(values[v]);
  return results;
}

}  // namespace dlf::graph
