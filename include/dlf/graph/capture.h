// Capture: run a step once, eagerly, and record every op it dispatches into a Graph.
#pragma once
#include <functional>
#include <optional>
#include <vector>

#include <dlf/graph/graph.h>

namespace dlf::graph {

/// A step: tensors in, tensors out. Everything else it touches (parameters, their gradients,
/// module buffers) is reached through the closure, as in torch.compile.
using StepFn = std::function<std::vector<Tensor>(const std::vector<Tensor>& inputs)>;

/// A training step: `loss(batch)`, its backward, then `after()` when given (what the step does
/// with the gradients: clipping, the optimizer's update), and the loss as the one result — what
/// `dlf train --compile` and the benchmarks capture.
StepFn backward_step(std::function<Tensor(const std::vector<Tensor>& batch)> loss,
                     std::function<void()> after = {});

/// How capture runs the step.
enum class CaptureMode {
  /// Runs it: the results, the gradients it leaves and its writes are the step's, as eager.
  eager,
  /// Runs no kernel — shapes, dtypes and aliasing only, as torch.compile's fake tensors — so
  /// capturing costs milliseconds at any size: the results hold undefined values, the step's
  /// gradients are cleared again, its writes to outside bytes do not happen and the default
  /// generator is put back, so that running the graph next does what the eager step would have.
  abstract,
};

/// What a capture gives: the graph and the step's results from the run that made it.
struct Capture {
  Graph graph;                  ///< the ops the step dispatched
  std::vector<Tensor> results;  ///< what the step returned (values undefined when abstract)
};

/// Runs `step(inputs)` on this thread (as `mode` says), recording each op it dispatches (forward,
/// backward, anything else), on any device (on meta it only plans). Tensors the step reads
/// that existed before are external buffers, bound by reference: later runs see their current
/// contents. Gradients it leaves on parameters are bound so a run leaves them too; the
/// parameters must have none when the step starts (zero_grad before it: a graph computes
/// gradients, it does not accumulate into old ones). Throws a dlf::Error naming the op when the
/// step touches values on the host outside a kernel (data(), item(), to_vector()): what it
/// does next could depend on data, which a graph cannot replay.
Capture capture(const StepFn& step, const std::vector<Tensor>& inputs,
                CaptureMode mode = CaptureMode::eager);

/// How this thread is capturing a step now; nullopt when it is not.
std::optional<CaptureMode> capturing();

/// While this thread captures a step: the step's reads of `param`'s bytes read `value` instead,
/// an op's output of param's shape and dtype, until unalias_in_capture(param) — ZeRO-3's
/// gathered parameters (parallel::FullyShardedDataParallel), which outside a graph are copied
/// into the parameters' storage and released after each use, and in a graph are the allgathers'
/// outputs themselves: planned in the arena like any activation, and no copy. `param` must own
/// its whole storage and `value` be contiguous; another view of param's bytes made outside
/// dispatch (a transpose autograd saved) reads that view of `value`. Nothing when not
/// capturing.
void alias_in_capture(const Tensor& param, const Tensor& value);
/// Ends alias_in_capture(param): reads see param's own bytes again.
void unalias_in_capture(const Tensor& param);
/// Whether this thread captures a step now and a value stands for `param`'s bytes in it.
bool aliased_in_capture(const Tensor& param);

}  // namespace dlf::graph
