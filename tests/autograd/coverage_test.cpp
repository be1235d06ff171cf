#include "autograd/grad_cases.h"

using namespace dlf;

TEST_CASE("the gradient-check table covers exactly the differentiable ops") {
  std::vector<std::string> differentiable = autograd::differentiable_ops();
  std::vector<std::string> covered = test::covered_ops();
  for (const auto& op : differentiable) {
    INFO("op with a backward but no gradient check: ", op);
    CHECK(std::find(covered.begin(), covered.end(), op) != covered.end());
  }
  for (const auto& op : covered) {
    INFO("gradient check for an op without a backward: ", op);
    CHECK(std::find(differentiable.begin(), differentiable.end(), op) != differentiable.end());
  }
  CHECK(differentiable.size() >= 6);
}

TEST_CASE("every registered op has a backward or is marked nondifferentiable") {
  for (const OpDef* op : registered_ops()) {
    if (op->inplace >= 0) continue;  // in-place ops refuse inputs that require grad
    INFO("op neither differentiable nor declared nondifferentiable: ", op->name);
    const auto diff = autograd::differentiable_ops();
    bool has_backward = std::find(diff.begin(), diff.end(), op->name) != diff.end();
    CHECK((has_backward || autograd::is_nondifferentiable(op->name)));
  }
}
