// `dlf graph`: capture, passes and memory plan of one training step, printed.
#include "graph_command.h"

#include <cstdio>

#include <dlf/device/atomic_file.h>
#include <dlf/dlf.h>
#include <dlf/parallel/device_arg.h>
#include <dlf/plan/reports.h>

namespace dlf::app {

void run_graph(const GraphCommand& o) {
  if (!o.dot.empty()) check_writable(o.dot, "--dot");  // before capturing
  if (!o.json.empty()) check_writable(o.json, "--json");
  const std::vector<Device> devices =
      parallel::setup_devices(1, parallel::parse_device_arg(o.device));
  DefaultDeviceGuard on(devices[0]);
  plan::CapturedStep c = plan::capture_step(o.model, o.batch, o.seq, o.precision, o.skip_passes);
  std::printf("%s", plan::describe(c, o.model, devices[0], o.precision).c_str());
  const graph::Graph& g = c.captured().last_executable().graph();
  if (!o.dot.empty()) {
    replace_file(o.dot, "DOT file", graph::to_dot(g));
    std::printf("wrote %s (render: dot -Tsvg %s -o step.svg)\n", o.dot.c_str(), o.dot.c_str());
  }
  if (!o.json.empty()) {
    graph::save(g, o.json);
    std::printf("wrote %s and %s.safetensors\n", o.json.c_str(), o.json.c_str());
  }
  // after the files: measuring runs the step (and AdamW) once more
  std::printf("%s", plan::describe(plan::memory_of(c, o.model)).c_str());
}

}  // namespace dlf::app
