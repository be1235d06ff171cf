// Backward of the view, copy and factory ops of core/.
#include <dlf/autograd/backward.h>

#include "autograd/derivatives/sum_to.h"

namespace dlf::autograd {
namespace {

Shape inverse_permutation(const Shape& dims) {
  Shape inverse(dims.size());
  for (size_t i = 0; i < dims.size(); ++i) {
    inverse[dims[i] < 0 ? dims[i] + static_cast<int64_t>(dims.size()) : dims[i]] =
        static_cast<int64_t>(i);
  }
  return inverse;
}

[[maybe_unused]] const bool registered = [] {
  register_backward("view", {.fn = [](const BackwardContext& c) -> std::vector<Tensor> {
                      return {c.grad().reshape(c.input_meta(0).shape)};
                    }});
  register_backward("permute", {.fn = [](const BackwardContext& c) -> std::vector<Tensor> {
                      return {c.grad().permute(inverse_permutation(c.attrs().ints("dims")))};
                    }});
  register_backward("slice", {.fn = [](const BackwardContext& c) -> std::vector<Tensor> {
                      Attrs a = c.attrs();
                      a.set("input_shape", c.input_meta(0).shape);
                      return {dispatch1(find_op("slice_backward"), {c.grad()}, std::move(a))};
                    }});
  register_backward("slice_backward", {.fn = [](const BackwardContext& c) -> std::vector<Tensor> {
                      const Attrs& a = c.attrs();
                      return {c.grad().slice(a.i("dim"), a.i("start"), a.i("end"), a.i("step"))};
                    }});
  register_backward("expand", {.fn = [](const BackwardContext& c) -> std::vector<Tensor> {
                      return {sum_to(c.grad(), c.input_meta(0).shape)};
                    }});
  register_backward("copy", {.fn = [](const BackwardContext& c) -> std::vector<Tensor> {
                      return {c.grad().to(c.input_meta(0).dtype).to(c.input_device(0))};
                    }});
  for (const char* op : {"full", "arange", "rand"}) register_nondifferentiable(op);
  return true;
}();

}  // namespace
}  // namespace dlf::autograd
