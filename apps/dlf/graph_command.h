// `dlf graph`: capture one training step of a zoo model, optimise it, and show what graph mode
// made of it — node counts per pass, the ops, the memory plan — and write it as DOT or JSON.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace dlf::app {

struct GraphCommand {
  std::string model = "gpt-nano";
  int64_t batch = 0, seq = 0;  ///< 0: the benchmarks' batch (models::example_step)
  std::string device = "cpu";  ///< cpu, meta[:PRESET] or sim[:PRESET]
  std::string precision = "fp32";
  std::string dot, json;                 ///< files to write, when given
  std::vector<std::string> skip_passes;  ///< passes of graph::optimize left out
};

void run_graph(const GraphCommand& o);

}  // namespace dlf::app
