// Tensors by name: a module's state, a file's contents.
#pragma once
#include <string>
#include <utility>
#include <vector>

#include <dlf/core/tensor.h>

namespace dlf {

/// Tensors by dotted name ("transformer.h.0.attn.c_attn.weight"), in order.
using NamedTensors = std::vector<std::pair<std::string, Tensor>>;

}  // namespace dlf
