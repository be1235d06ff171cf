// Lookup of registered backward formulas (private to autograd/).
#pragma once
#include <dlf/autograd/backward.h>

namespace dlf::autograd {

/// The op's backward, or nullptr when it has none.
const BackwardDef* find_backward(const OpDef& op);

}  // namespace dlf::autograd
