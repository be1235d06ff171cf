// Common-subexpression elimination: a node is keyed by its op, its attributes written exactly
// and its inputs — each with the count of in-place writes its bytes had so far, so a value read
// before and after a write is two different things.
#include <dlf/graph/passes.h>

#include <charconv>
#include <map>
#include <sstream>

namespace dlf::graph {
namespace {

// The attributes, doubles to the last bit.
std::string exact(const Attrs& attrs) {
  std::ostringstream os;
  for (const auto& [name, value] : attrs.items()) {
    os << name << '=';
    std::visit(
        [&](const auto& v) {
          using V = std::decay_t<decltype(v)>;
          if constexpr (std::is_same_v<V, double>) {
            char buf[32];
            os << std::string_view(buf, std::to_chars(buf, buf + sizeof buf, v).ptr);
          } else if constexpr (std::is_same_v<V, std::vector<int64_t>>) {
            for (int64_t x : v) os << x << ',';
          } else if constexpr (std::is_same_v<V, DType>) {
            os << dtype_name(v);
          } else if constexpr (std::is_same_v<V, Device>) {
            os << v.str();
          } else {
            os << v;
          }
        },
        value);
    os << ';';
  }
  return os.str();
}

}  // namespace

int eliminate_common_subexpressions(Graph& g) {
  std::vector<int> replace(g.values.size());
  for (size_t v = 0; v < replace.size(); ++v) replace[v] = int(v);
  std::vector<int> writes(g.buffers.size(), 0);  // in-place writes so far, per buffer
  std::vector<bool> escapes(g.values.size(), false);
  for (int v : g.outputs) escapes[v] = true;
  for (const GradBinding& b : g.grads) escapes[b.value] = true;

  std::map<std::string, size_t> seen;  // key -> index in kept
  std::vector<Node> kept;
  int removed = 0;
  for (Node& node : g.nodes) {
    for (int& v : node.inputs)
      if (v >= 0) v = replace[v];
    const bool pure = node.op->inplace < 0 && node.op->also_writes.empty() && !node.op->redraw &&
                      !node.op->collective;
    bool mergeable = pure;
    for (int v : node.outputs) mergeable = mergeable && !escapes[v];
    if (mergeable) {
      std::ostringstream key;
      key << node.op->name << '|' << exact(node.attrs) << '|';
      for (int v : node.inputs) key << v << '@' << (v >= 0 ? writes[g.values[v].buffer] : 0) << ',';
      auto [it, fresh] = seen.try_emplace(key.str(), kept.size());
      if (!fresh) {
        const Node& first = kept[it->second];
        for (size_t i = 0; i < node.outputs.size(); ++i)
          replace[node.outputs[i]] = first.outputs[i];
        ++removed;
        continue;
      }
    }
    for (int b : g.written_in_place_by(node)) ++writes[b];
    kept.push_back(std::move(node));
  }
  g.nodes = std::move(kept);
  for (int& v : g.outputs) v = replace[v];
  for (GradBinding& b : g.grads) b.value = replace[b.value];
  g.compact();
  return removed;
}

}  // namespace dlf::graph
