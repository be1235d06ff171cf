// compile(): the cache of Executables, one per input signature, grad mode and autocast.
#include <dlf/autograd/grad_mode.h>
#include <dlf/core/autocast.h>
#include <dlf/graph/executable.h>

#include <chrono>

namespace dlf::graph {
namespace {
double ms_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
      .count();
}
}  // namespace

Compiled::Compiled(StepFn step, std::vector<std::string> skip_passes)
    : step_(std::move(step)), skip_passes_(std::move(skip_passes)) {
  check_pass_names(skip_passes_);
}

std::vector<Tensor> Compiled::operator()(const std::vector<Tensor>& inputs) {
  const bool grad = autograd::grad_enabled();
  const std::optional<DType> cast = autocast_dtype();
  for (const Entry& e : cache_) {
    if (e.grad_enabled == grad && e.autocast == cast && e.executable->accepts(inputs))
      return e.executable->run(inputs);
  }
  Entry e{.grad_enabled = grad, .autocast = cast, .executable = nullptr, .report = {}};
  auto start = std::chrono::steady_clock::now();
  Capture c = capture(step_, inputs, CaptureMode::abstract);
  e.report.capture_ms = ms_since(start);
  e.report.nodes_captured = c.graph.nodes.size();
  start = std::chrono::steady_clock::now();
  e.report.passes = optimize(c.graph, skip_passes_);
  e.executable = std::make_unique<Executable>(std::move(c.graph));
  e.report.optimise_ms = ms_since(start);
  cache_.push_back(std::move(e));
  return cache_.back().executable->run(inputs);
}

const Executable& Compiled::last_executable() const {
  DLF_CHECK(!cache_.empty(), "graph::Compiled: nothing captured yet");
  return *cache_.back().executable;
}

const CompileReport& Compiled::last_report() const {
  DLF_CHECK(!cache_.empty(), "graph::Compiled: nothing captured yet");
  return cache_.back().report;
}

}  // namespace dlf::graph
