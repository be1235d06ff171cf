// The default pass pipeline, timed pass by pass.
#include <dlf/graph/passes.h>

#include <algorithm>
#include <chrono>
#include <functional>

namespace dlf::graph {
namespace {

using Pass = std::pair<std::string, std::function<int(Graph&)>>;

const std::vector<Pass>& pipeline() {
  static const std::vector<Pass> passes = {
      {"constant folding", fold_constants},
      {"common subexpressions", eliminate_common_subexpressions},
      {"dead code", eliminate_dead_code},
      {"rematerialisation", rematerialize},
      {"epilogue fusion", fuse_epilogues},
      {"element-wise fusion", fuse_elementwise},
      {"gather prefetch", prefetch_gathers},
  };
  return passes;
}

}  // namespace

const std::vector<std::string>& pass_names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> out;
    for (const auto& [name, pass] : pipeline()) out.push_back(name);
    return out;
  }();
  return names;
}

void check_pass_names(const std::vector<std::string>& names) {
  for (const std::string& name : names) {
    if (std::find(pass_names().begin(), pass_names().end(), name) != pass_names().end()) continue;
    std::string known;
    for (const std::string& n : pass_names()) known += (known.empty() ? "" : ", ") + n;
    throw Error("graph: no pass '" + name + "' (" + known + ")");
  }
}

std::vector<PassReport> optimize(Graph& g, const std::vector<std::string>& skip) {
  check_pass_names(skip);
  std::vector<PassReport> reports;
  for (const auto& [name, pass] : pipeline()) {
    if (std::find(skip.begin(), skip.end(), name) != skip.end()) continue;
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
