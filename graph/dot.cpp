// to_dot(): one box per node (views dashed), edges along values, the step's inputs, results and
// gradients as ellipses; reads of parameters and state are counted in the reading box.
#include <dlf/graph/io.h>

#include <dlf/graph/passes.h>

#include <sstream>

namespace dlf::graph {

std::string to_dot(const Graph& g) {
  std::ostringstream os;
  os << "digraph step {\n  node [shape=box, fontsize=10, fontname=\"monospace\"];\n";
  std::vector<int> argument_of(g.values.size(), -1);
  for (size_t i = 0; i < g.arguments.size(); ++i) {
    argument_of[g.arguments[i]] = int(i);
    const Value& v = g.values[g.arguments[i]];
    os << "  in" << i << " [shape=ellipse, label=\"input " << i << "\\n"
       << shape_str(v.shape) << ' ' << dtype_name(v.dtype) << "\"];\n";
  }
  for (size_t n = 0; n < g.nodes.size(); ++n) {
    const Node& node = g.nodes[n];
    int external = 0;
    for (int v : node.inputs) external += v >= 0 && g.values[v].producer < 0 && argument_of[v] < 0;
    os << "  n" << n << " [label=\"" << node.op->name;
    if (const std::string chain = fused_chain(node); !chain.empty()) os << "\\n" << chain;
    if (!node.outputs.empty()) os << "\\n" << shape_str(g.values[node.outputs[0]].shape);
    if (external > 0) os << "\\n+" << external << " external";
    os << '"' << (node.op->view ? ", style=dashed" : "") << "];\n";
    for (int v : node.inputs) {
      if (v < 0) continue;
      if (g.values[v].producer >= 0)
        os << "  n" << g.values[v].producer << " -> n" << n << ";\n";
      else if (argument_of[v] >= 0)
        os << "  in" << argument_of[v] << " -> n" << n << ";\n";
    }
  }
  const auto sink = [&](const std::string& name, const std::string& label, int v) {
    os << "  " << name << " [shape=ellipse, label=\"" << label << "\"];\n";
    if (g.values[v].producer >= 0) os << "  n" << g.values[v].producer << " -> " << name << ";\n";
  };
  for (size_t i = 0; i < g.outputs.size(); ++i)
    sink("out" + std::to_string(i), "result " + std::to_string(i), g.outputs[i]);
  for (size_t i = 0; i < g.grads.size(); ++i)
    sink("grad" + std::to_string(i), "grad " + shape_str(g.grads[i].param.shape()),
         g.grads[i].value);
  os << "}\n";
  return os.str();
}

}  // namespace dlf::graph
