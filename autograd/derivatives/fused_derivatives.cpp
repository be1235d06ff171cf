// The fused ops of core/ops/fused.h have no backward: they exist only in captured graphs, whose
// backward is already ops of their own.
#include <dlf/autograd/backward.h>

namespace dlf::autograd {
namespace {

[[maybe_unused]] const bool registered = [] {
  for (const char* op : {"fused_elementwise", "matmul_add", "linear_add", "conv2d_add"})
    register_nondifferentiable(op);
  return true;
}();

}  // namespace
}  // namespace dlf::autograd
