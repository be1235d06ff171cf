// The gradient-check table: each family's test file adds its cases; one test per family runs
// them, and a coverage test checks that the table covers every differentiable op.
#pragma once
#include <functional>
#include <string>
#include <vector>

#include "test_util.h"

namespace dlf::test {

struct GradCase {
  std::string op;    ///< the registered op whose backward this exercises
  std::string name;  ///< what is special about the case
  /// Fresh f64 inputs; those that should be checked require grad.
  std::function<std::vector<Tensor>()> inputs;
  std::function<Tensor(const std::vector<Tensor>&)> fn;
  autograd::GradcheckOptions options = {};
};

/// Adds cases at static-initialisation time; returns a value to keep in a variable.
bool add_grad_cases(const std::string& family, std::vector<GradCase> cases);
/// Runs every case of a family, one doctest check per case.
void run_grad_cases(const std::string& family);
/// Ops covered by some case.
std::vector<std::string> covered_ops();

/// Random f64 leaves that require grad (shape [] is a scalar).
std::vector<Tensor> leaves(const std::vector<Shape>& shapes, uint64_t seed = 3);
/// A leaf with the given values laid out non-contiguously (the transpose of a contiguous one).
Tensor transposed_leaf(const Shape& shape, uint64_t seed = 5);

}  // namespace dlf::test
