// `dlf graph`: capture, passes and memory plan of one training step, printed.
#include "graph_command.h"

#include <cstdio>
#include <map>

#include <dlf/dlf.h>
#include <dlf/nn/atomic_file.h>

#include "devices.h"

namespace dlf::app {

void run_graph(const GraphCommand& o) {
  const std::vector<Device> devices = setup_devices(1, parse_device_arg(o.device));
  DefaultDeviceGuard on(devices[0]);
  manual_seed(1234);
  Generator data(1234);
  const models::ExampleStep s = models::example_step(o.model, o.batch, o.seq, data);
  const std::vector<Tensor> params = s.model->parameters();
  nn::optim::AdamW opt(params);
  opt.init_state();
  graph::Compiled compiled(
      graph::backward_step(s.loss, [&] { nn::optim::clip_and_update(opt, params, 1.0); }));
  {
    AutocastGuard autocast(autocast_for(o.precision == "bf16" ? DType::bf16 : DType::f32));
    opt.begin_step();
    compiled(s.batch);
  }
  const graph::CompileReport& r = compiled.last_report();
  const graph::Graph& g = compiled.last_executable().graph();
  std::printf(
      "%s: one training step (forward, backward, clipping, AdamW), batch %lld x %lld, %s, %s\n",
      o.model.c_str(), static_cast<long long>(s.batch_size), static_cast<long long>(s.seq),
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
    nn::replace_file(o.dot, "DOT file", graph::to_dot(g));
    std::printf("wrote %s (render: dot -Tsvg %s -o step.svg)\n", o.dot.c_str(), o.dot.c_str());
  }
  if (!o.json.empty()) {
    graph::save(g, o.json);
    std::printf("wrote %s and %s.safetensors\n", o.json.c_str(), o.json.c_str());
  }
}

}  // namespace dlf::app
