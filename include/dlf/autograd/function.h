// Differentiable steps that are not ops — a collective inside a tensor-parallel layer — in the
// manner of PyTorch's autograd.Function: the forward runs unrecorded, the backward is a
// function from output gradients to input gradients.
#pragma once
#include <functional>
#include <string>
#include <vector>

#include <dlf/core/tensor.h>

namespace dlf::autograd {

using Tensors = std::vector<Tensor>;  ///< what a Function takes and returns

/// Runs `forward(inputs)` under no-grad. When grad mode is on and an input requires grad, the
/// (floating) outputs link to a node named `name` whose backward calls `backward(grads)`:
/// one gradient per output (zeros where none arrived), returning one per input (undefined
/// for an input that gets none).
Tensors apply_function(std::string name, const Tensors& inputs,
                       const std::function<Tensors(const Tensors&)>& forward,
                       std::function<Tensors(const Tensors&)> backward);

}  // namespace dlf::autograd
