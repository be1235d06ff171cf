// Activation recompute (torch.utils.checkpoint, non-reentrant): a stretch of the forward pass
// keeps none of the tensors its ops save for backward; backward recomputes them when it first
// needs one, and the gradients are those of the plain forward, bit for bit.
#pragma once
#include <functional>
#include <string_view>
#include <vector>

#include <dlf/core/tensor.h>

namespace dlf::autograd {

/// A function of tensors to tensors, run once forward and once more during backward.
using CheckpointFn = std::function<std::vector<Tensor>(const std::vector<Tensor>&)>;

/// What a checkpointed stretch of the forward pass keeps for backward.
enum class Recompute {
  none,       ///< what its ops save, as without a checkpoint (a plain call)
  full,       ///< its inputs only: backward runs all of it again
  selective,  ///< its inputs and the outputs of its costly ops (costly_to_recompute: matmuls,
              ///< convolutions, attention); backward runs again only the cheap ops between
              ///< them (PyTorch's selective activation checkpointing, Megatron-LM's idea)
};
/// "none", "full" or "selective".
const char* recompute_name(Recompute what);
/// The Recompute of that name; a dlf::Error listing the names otherwise.
Recompute parse_recompute(std::string_view name);

/// Runs fn(inputs) as usual, with its backward graph, except that the tensors its ops save
/// are dropped: only `inputs` (and whatever fn's closure holds, such as a module's parameters)
/// stay alive, and under Recompute::selective the outputs of fn's costly ops. When backward
/// first needs a dropped tensor, fn runs again on the inputs with the thread's default
/// generator put back where it was, so dropout draws the same masks (a Generator passed
/// explicitly is not restored); a kept output stands in for its op, which does not run again
/// (unless its bytes were changed in place since). fn must run the same ops each time. Inside
/// another checkpoint, with grad mode off, or with Recompute::none, it is a plain call.
/// Changing an input in place before backward is a dlf::Error at the recompute.
std::vector<Tensor> checkpoint(const CheckpointFn& fn, const std::vector<Tensor>& inputs,
                               Recompute what = Recompute::full);
/// Whether this thread is running a checkpoint's recompute (backward running a stretch of the
/// forward pass again): what a profiler counts as recomputation.
bool recomputing();

/// checkpoint() of a function of one tensor.
Tensor checkpoint(const std::function<Tensor(const Tensor&)>& fn, const Tensor& input,
                  Recompute what = Recompute::full);

}  // namespace dlf::autograd
