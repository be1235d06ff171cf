// Selecting element-wise: where(cond, a, b) and masked_fill(x, mask, value). Plain loops: a
// select moves bytes and computes nothing, which the loop does at memory speed.
#include <dlf/core/ops/elementwise.h>

#include "core/kernels/elementwise_loop.h"
#include "core/ops/elementwise_common.h"

namespace dlf {
namespace {

using elementwise::DTypeSet;

void check_bool(const char* op, const char* what, const Tensor& t) {
  DLF_CHECK(t.dtype() == DType::b8, op, ": ", what, " must be bool, got ", dtype_name(t.dtype()),
            " ", shape_str(t.shape()));
}

const OpDef& where_op = register_op({
    .name = "where",
    .infer = [](Inputs in, const Attrs&) -> std::vector<TensorMeta> {
      check_bool("where", "the condition", in[0]);
      elementwise::check_same_dtype("where", in[1], in[2]);
      Shape shape = elementwise::broadcast("where", in[0].shape(), in[1].shape());
      return {{elementwise::broadcast("where", shape, in[2].shape()), in[1].dtype()}};
    },
    .kernel =
        [](Inputs in, const Attrs&, Outputs out) {
          elementwise::visit<DTypeSet::all>(in[1].dtype(), [&](auto tag) {
            using T = typename decltype(tag)::type;
            kernels::map_elements<T, bool, T, T>(out[0], in,
                                                 [](bool c, auto a, auto b) { return c ? a : b; });
          });
        },
    .cost = elementwise::cost_per_element(elementwise::kArithmetic),
});

const OpDef& masked_fill_op = register_op({
    .name = "masked_fill",
    .infer = [](Inputs in, const Attrs& a) -> std::vector<TensorMeta> {
      check_bool("masked_fill", "the mask", in[1]);
      DLF_CHECK(
          elementwise::broadcast("masked_fill", in[0].shape(), in[1].shape()) == in[0].shape(),
          "masked_fill: mask of shape ", shape_str(in[1].shape()),
          " does not broadcast to the shape of x, ", shape_str(in[0].shape()));
      elementwise::check_scalar("masked_fill", a.f("value"), in[0]);
      return {{in[0].shape(), in[0].dtype()}};
    },
    .kernel =
        [](Inputs in, const Attrs& a, Outputs out) {
          elementwise::visit<DTypeSet::all>(in[0].dtype(), [&](auto tag) {
            using T = typename decltype(tag)::type;
            const auto value = kernels::convert<kernels::acc_t<T>>(a.f("value"));
            kernels::map_elements<T, T, bool>(out[0], in,
                                              [value](auto x, bool m) { return m ? value : x; });
          });
        },
    .cost = elementwise::cost_per_element(elementwise::kArithmetic),
});

}  // namespace

Tensor where(const Tensor& cond, const Tensor& a, const Tensor& b) {
  return dispatch1(where_op, {cond, a, b});
}
Tensor masked_fill(const Tensor& x, const Tensor& mask, double value) {
  return dispatch1(masked_fill_op, {x, mask}, {{"value", value}});
}

}  // namespace dlf
