// Copies: contiguous(), clone(), to(dtype), to(device) and the in-place copy_().
#include <dlf/core/op.h>

#include "core/kernels/convert.h"
#include "core/kernels/strided_loop.h"

namespace dlf {
namespace {

// dst[i] = convert(src[i]) over dst's shape; src broadcasts to it; both may be strided.
void strided_convert(const Tensor& dst, const Tensor& src) {
  kernels::StridedOperands<2> ops{
      {static_cast<char*>(dst.raw_data()), static_cast<char*>(src.raw_data())},
      {kernels::broadcast_byte_strides(dst, dst.shape()),
       kernels::broadcast_byte_strides(src, dst.shape())}};
  kernels::visit_dtype(dst.dtype(), [&](auto dtag) {
    kernels::visit_dtype(src.dtype(), [&](auto stag) {
      using D = typename decltype(dtag)::type;
      using S = typename decltype(stag)::type;
      kernels::strided_for<2>(dst.shape(), ops, [](const std::array<char*, 2>& p,
                                                   const std::array<int64_t, 2>& s, int64_t n) {
        if (s[0] == sizeof(D) && s[1] == sizeof(S)) {
          D* d = reinterpret_cast<D*>(p[0]);
          const S* x = reinterpret_cast<const S*>(p[1]);
          for (int64_t i = 0; i < n; ++i) d[i] = kernels::convert<D>(x[i]);
        } else {
          for (int64_t i = 0; i < n; ++i) {
            *reinterpret_cast<D*>(p[0] + i * s[0]) =
                kernels::convert<D>(*reinterpret_cast<const S*>(p[1] + i * s[1]));
          }
        }
      });
    });
  });
}

const OpDef& copy_op = register_op({
    .name = "copy",
    .infer = [](Inputs in, const Attrs& a) -> std::vector<TensorMeta> {
      DLF_CHECK(in[0].device().has_data() || !a.device("device").has_data(),
                "cannot copy a meta tensor (shape ", shape_str(in[0].shape()),
                ") to ", a.device("device").str(), ": it has no data");
      return {{in[0].shape(), a.dtype("dtype")}};
    },
    .kernel = [](Inputs in, const Attrs&, Outputs out) { strided_convert(out[0], in[0]); },
});

const OpDef& copy_into_op = register_op({
    .name = "copy_",
    .infer = [](Inputs in, const Attrs&) -> std::vector<TensorMeta> {
      DLF_CHECK(broadcast_shapes(in[0].shape(), in[1].shape()) == in[0].shape(), "copy_: source of shape ",
                shape_str(in[1].shape()), " does not broadcast to destination shape ",
                shape_str(in[0].shape()));
      return {{in[0].shape(), in[0].dtype()}};
    },
    .kernel = [](Inputs in, const Attrs&, Outputs out) { strided_convert(out[0], in[1]); },
    .inplace = 0,
});

Tensor copy_to(const Tensor& t, DType dtype, Device device) {
  return dispatch1(copy_op, {t}, {{"dtype", dtype}, {"device", device}});
}

}  // namespace

Tensor Tensor::contiguous() const { return is_contiguous() ? *this : clone(); }
Tensor Tensor::clone() const { return copy_to(*this, dtype(), device()); }
Tensor Tensor::to(DType dtype) const { return dtype == this->dtype() ? *this : copy_to(*this, dtype, device()); }
Tensor Tensor::to(Device device) const { return device == this->device() ? *this : copy_to(*this, dtype(), device); }

Tensor& Tensor::copy_(const Tensor& src) {
  dispatch(copy_into_op, {*this, src});
  return *this;
}

}  // namespace dlf
