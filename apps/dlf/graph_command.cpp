// `dlf graph`: capture, passes and memory plan of one training step, printed.
#include "graph_command.h"

#include <cstdio>
#include <map>
#include <memory>
#include <set>

#include <dlf/device/atomic_file.h>
#include <dlf/dlf.h>
#include <dlf/parallel/planning_communicator.h>
#include <dlf/plan/compiled.h>

#include "devices.h"

namespace dlf::app {

void run_graph(const GraphCommand& o) {
  if (!o.dot.empty()) check_writable(o.dot, "--dot");  // before capturing
  if (!o.json.empty()) check_writable(o.json, "--json");
  const std::vector<Device> devices = setup_devices(1, parse_device_arg(o.device));
  DefaultDeviceGuard on(devices[0]);
  plan::CapturedStep c = plan::capture_step(o.model, o.batch, o.seq, o.precision, o.skip_passes);
  const graph::Compiled& compiled = c.captured();
  const graph::CompileReport& r = compiled.last_report();
  const graph::Graph& g = compiled.last_executable().graph();
  std::printf(
      "%s: one training step (forward, backward, clipping, AdamW), batch %lld x %lld, %s, %s\n",
      o.model.c_str(), static_cast<long long>(c.rows), static_cast<long long>(c.seq),
      devices[0].str().c_str(), o.precision.c_str());
  std::printf("captured %zu nodes in %.1f ms\n", r.nodes_captured, r.capture_ms);
  std::printf("%-24s %8s %8s %9s\n", "pass", "before", "after", "ms");
  for (const graph::PassReport& p : r.passes)
    std::printf("%-24s %8zu %8zu %9.2f\n", p.pass.c_str(), p.nodes_before, p.nodes_after, p.ms);
  std::map<std::string, int> ops;
  for (const graph::Node& n : g.nodes) ++ops[n.op->name];
  std::string line;
  for (const auto& [name, count] : ops) line += " " + name + " " + std::to_string(count);
  std::printf("ops:%s\n", line.c_str());
  std::map<std::string, int> chains;
  for (const graph::Node& n : g.nodes)
    if (const std::string chain = graph::fused_chain(n); !chain.empty()) ++chains[chain];
  for (const auto& [chain, count] : chains) std::printf("fused %3d x %s\n", count, chain.c_str());
  std::map<graph::BufferKind, std::pair<int, double>> kinds;
  for (const graph::Buffer& b : g.buffers) {
    kinds[b.kind].first++;
    kinds[b.kind].second += double(b.nbytes);
  }
  for (const auto& [kind, v] : kinds)
    std::printf("%-9s %5d buffers, %s\n", graph::kind_name(kind).c_str(), v.first,
                format_bytes(v.second).c_str());
  std::printf("memory plan: arena %s (best possible %s)\n",
              format_bytes(double(g.arena_bytes)).c_str(),
              format_bytes(double(graph::arena_lower_bound(g))).c_str());
  if (!o.dot.empty()) {
    replace_file(o.dot, "DOT file", graph::to_dot(g));
    std::printf("wrote %s (render: dot -Tsvg %s -o step.svg)\n", o.dot.c_str(), o.dot.c_str());
  }
  if (!o.json.empty()) {
    graph::save(g, o.json);
    std::printf("wrote %s and %s.safetensors\n", o.json.c_str(), o.json.c_str());
  }
  // after the files: measuring runs the step (and AdamW) once more
  const plan::CompiledStepMemory m = plan::memory_of(c, o.model);
  std::printf(
      "peak: planned %s (parameters %s, optimizer state %s, batch %s, arena %s); the "
      "allocator's high-water over a step %s (%+.1f %%)\n",
      format_bytes(double(m.planned_peak())).c_str(), format_bytes(double(m.parameters)).c_str(),
      format_bytes(double(m.optimizer_state)).c_str(), format_bytes(double(m.batch_bytes)).c_str(),
      format_bytes(double(m.arena)).c_str(), format_bytes(double(m.measured_peak)).c_str(),
      100.0 * double(m.measured_peak - m.planned_peak()) / double(m.planned_peak()));
}

}  // namespace dlf::app
