// The default pass pipeline, timed pass by pass.
#include <dlf/graph/passes.h>

#include <chrono>
#include <functional>

namespace dlf::graph {

std::vector<PassReport> optimize(Graph& g) {
  const std::pair<const char*, std::function<int(Graph&)>> passes[] = {
      {"constant folding", fold_constants},
      {"common subexpressions", eliminate_common_subexpressions},
      {"dead code", eliminate_dead_code},
      {"rematerialisation", rematerialize},
  };
  std::vector<PassReport> reports;
  for (const auto& [name, pass] : passes) {
    PassReport r{.pass = name, .nodes_before = g.nodes.size()};
    const auto start = std::chrono::steady_clock::now();
    pass(g);
    r.ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    r.nodes_after = g.nodes.size();
    reports.push_back(r);
  }
  return reports;
}

}  // namespace dlf::graph
