// Running a graph: kernels over a planned arena, without dispatch, allocation per op, shape
// inference or autograd; and compile(), which captures a step once per input signature.
#pragma once
#include <memory>
#include <optional>
#include <vector>

#include <dlf/graph/capture.h>
#include <dlf/graph/passes.h>

namespace dlf::graph {

/// A graph ready to run: memory planned, each run replaying its kernels in order.
class Executable {
 public:
  /// Plans the graph's memory (plan_memory()).
  explicit Executable(Graph graph);
  /// Whether inputs match the ones it was captured with (count, shapes, strides, dtypes,
  /// devices), as torch.compile's guards.
  bool accepts(const std::vector<Tensor>& inputs) const;
  /// Runs the step on `inputs`: one arena allocation, each node's kernel launched on views of
  /// it (observers — profiler, trace, sim clock — see every kernel), random ops drawing from
  /// the default generator as eager would. Returns the step's results and leaves its gradients
  /// on the parameters. A dlf::Error when accepts() is false or a bound parameter already has
  /// a gradient.
  std::vector<Tensor> run(const std::vector<Tensor>& inputs) const;
  const Graph& graph() const { return graph_; }  ///< the graph it runs, memory planned

 private:
  Graph graph_;
  Device arena_device_ = kCPU;
};

/// What compile() did for one input signature.
struct CompileReport {
  std::vector<PassReport> passes;  ///< each pass of optimize()
  size_t nodes_captured = 0;       ///< before the passes
  double capture_ms = 0;           ///< tracing the step (no kernel runs)
  double optimise_ms = 0;          ///< the passes and the memory plan
};

/// A step compiled per input signature (torch.compile): the first call with a new one
/// captures the step without running its kernels (CaptureMode::abstract), optimises and plans
/// the graph and runs it; later calls with that signature, the same grad mode and the same
/// autocast run that Executable again.
class Compiled {
 public:
  /// Nothing is captured before the first call; each capture is optimised by optimize() less
  /// the passes `skip_passes` names.
  explicit Compiled(StepFn step, std::vector<std::string> skip_passes = {});
  /// The step's results on `inputs`, from its graph (captured first when new).
  std::vector<Tensor> operator()(const std::vector<Tensor>& inputs);
  size_t captures() const { return cache_.size(); }  ///< how many signatures were captured
  /// The graph of the last capture and what making it did; a dlf::Error before any.
  const Executable& last_executable() const;
  const CompileReport& last_report() const;  ///< what making last_executable() took

 private:
  struct Entry {
    bool grad_enabled;
    std::optional<DType> autocast;
    std::unique_ptr<Executable> executable;
    CompileReport report;
  };
  StepFn step_;
  std::vector<std::string> skip_passes_;
  std::vector<Entry> cache_;
};

}  // namespace dlf::graph
