// Activation recompute (torch.utils.checkpoint, non-reentrant): a stretch of the forward pass
// keeps none of the tensors its ops save for backward; backward recomputes them when it first
// needs one, and the gradients are those of the plain forward, bit for bit.
#pragma once
#include <functional>
#include <vector>

#include <dlf/core/tensor.h>

namespace dlf::autograd {

/// A function of tensors to tensors, run once forward and once more during backward.
using CheckpointFn = std::function<std::vector<Tensor>(const std::vector<Tensor>&)>;

/// Runs fn(inputs) as usual, with its backward graph, except that the tensors its ops save
/// are dropped: only `inputs` (and whatever fn's closure holds, such as a module's parameters)
/// stay alive. When backward first needs one of them, fn runs again on the inputs with the
/// thread's default generator put back where it was, so dropout draws the same masks (a
/// Generator passed explicitly is not restored). fn must run the same ops each time. Inside
/// another checkpoint, or with grad mode off, it is a plain call. Changing an input in place
/// before backward is a dlf::Error at the recompute.
std::vector<Tensor> checkpoint(const CheckpointFn& fn, const std::vector<Tensor>& inputs);
/// checkpoint() of a function of one tensor.
Tensor checkpoint(const std::function<Tensor(const Tensor&)>& fn, const Tensor& input);

}  // namespace dlf::autograd
