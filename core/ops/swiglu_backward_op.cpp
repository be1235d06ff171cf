// swiglu's fused first-order backward: da = g · b · silu'(a) and db = g · silu(a) in one pass
// over g, a and b (the composite makes sigmoid(a) and four products, each a pass).
#include <dlf/core/op.h>

#include "core/kernels/activation_math.h"
#include "core/kernels/convert.h"
#include "core/kernels/strided_loop.h"
#include "core/ops/elementwise_common.h"

namespace dlf {
namespace {

template <typename T>
void swiglu_grads(Inputs in, Outputs out) {
  using A = kernels::acc_t<T>;
  const Shape& shape = out[0].shape();
  kernels::StridedOperands<5> ops;
  const Tensor* operands[5] = {&out[0], &out[1], &in[0], &in[1], &in[2]};
  for (size_t k = 0; k < 5; ++k) {
    ops.base[k] = static_cast<char*>(operands[k]->raw_data());
    ops.byte_strides[k] = kernels::broadcast_byte_strides(*operands[k], shape);
  }
  // d(silu(a) b)/da = b · s (1 + a (1 − s)), d/db = silu(a) = a s, with s = sigmoid(a).
  auto grads = [](A g, A a, A b, T& da, T& db) {
    const A s = kernels::sigmoid_of(a);
    da = kernels::convert<T>(g * b * s * (A(1) + a * (A(1) - s)));
    db = kernels::convert<T>(g * a * s);
  };
  kernels::strided_for<5>(
      shape, std::move(ops),
      [&](const std::array<char*, 5>& p, const std::array<int64_t, 5>& s, int64_t n) {
        constexpr int64_t e = sizeof(T);
        if (s == std::array<int64_t, 5>{e, e, e, e, e}) {  // dense: a loop that vectorises
          T *da = reinterpret_cast<T*>(p[0]), *db = reinterpret_cast<T*>(p[1]);
          const T* g = reinterpret_cast<const T*>(p[2]);
          const T* a = reinterpret_cast<const T*>(p[3]);
          const T* b = reinterpret_cast<const T*>(p[4]);
          for (int64_t i = 0; i < n; ++i) grads(A(g[i]), A(a[i]), A(b[i]), da[i], db[i]);
          return;
        }
        auto at = [&](int k, int64_t i) { return reinterpret_cast<T*>(p[k] + i * s[k]); };
        for (int64_t i = 0; i < n; ++i)
          grads(A(*at(2, i)), A(*at(3, i)), A(*at(4, i)), *at(0, i), *at(1, i));
      });
}

// Inputs: grad of the output, a, b (broadcasting to the grad's shape). Outputs: da and db of
// the grad's shape; the formula sums them down to a's and b's shapes.
const OpDef& swiglu_backward_op = register_op({
    .name = "swiglu_backward",
    .infer = [](Inputs in, const Attrs&) -> std::vector<TensorMeta> {
      const Tensor &g = in[0], &a = in[1], &b = in[2];
      elementwise::check_dtype("swiglu_backward", elementwise::DTypeSet::floating, g);
      elementwise::check_same_dtype("swiglu_backward", g, a);
      elementwise::check_same_dtype("swiglu_backward", g, b);
      DLF_CHECK(elementwise::broadcast("swiglu_backward", a.shape(), b.shape()) == g.shape(),
                "swiglu_backward: grad ", shape_str(g.shape()), " is not the shape a ",
                shape_str(a.shape()), " and b ", shape_str(b.shape()), " broadcast to");
      return {{g.shape(), g.dtype()}, {g.shape(), g.dtype()}};
    },
    .kernel =
        [](Inputs in, const Attrs&, Outputs out) {
          kernels::visit_floating(in[0].dtype(), "swiglu_backward", [&](auto tag) {
            swiglu_grads<typename decltype(tag)::type>(in, out);
          });
        },
    .cost = elementwise::cost_per_element(elementwise::kTranscendental + 9),
});

}  // namespace
}  // namespace dlf
