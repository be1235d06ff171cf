// Copies: contiguous(), clone(), to(dtype), to(device) and the in-place copy_().
#include <dlf/core/op.h>

#include "core/kernels/strided_copy.h"

namespace dlf {
namespace {

const OpDef& copy_op = register_op({
    .name = "copy",
    .infer = [](Inputs in, const Attrs& a) -> std::vector<TensorMeta> {
      DLF_CHECK(in[0].device().has_data() || !a.device("device").has_data(),
                "cannot copy a meta tensor (shape ", shape_str(in[0].shape()), ") to ",
                a.device("device").str(), ": it has no data");
      return {{in[0].shape(), a.dtype("dtype"),
               a.has("channels_last") ? MemoryFormat::channels_last : MemoryFormat::contiguous}};
    },
    .kernel = [](Inputs in, const Attrs&, Outputs out) { kernels::strided_copy(out[0], in[0]); },
});

const OpDef& copy_into_op = register_op({
    .name = "copy_",
    .infer = [](Inputs in, const Attrs&) -> std::vector<TensorMeta> {
      DLF_CHECK(broadcast_shapes(in[0].shape(), in[1].shape()) == in[0].shape(),
                "copy_: source of shape ", shape_str(in[1].shape()),
                " does not broadcast to destination shape ", shape_str(in[0].shape()));
      return {{in[0].shape(), in[0].dtype()}};
    },
    .kernel = [](Inputs in, const Attrs&, Outputs out) { kernels::strided_copy(out[0], in[1]); },
    .inplace = 0,
});

// A copy in another dtype or on another device keeps a channels-last tensor channels last, one
// channel included: [N, 1, H, W] is contiguous too, but the strides say which layout the ops
// after the copy (a conv's output follows its input) will work in.
Tensor copy_to(const Tensor& t, DType dtype, Device device) {
  Attrs attrs{{"dtype", dtype}, {"device", device}};
  if (t.is_channels_last() && t.strides() != contiguous_strides(t.shape()))
    attrs.set("channels_last", true);
  return dispatch1(copy_op, {t}, std::move(attrs));
}

}  // namespace

Tensor Tensor::contiguous() const { return is_contiguous() ? *this : clone(); }
Tensor Tensor::contiguous(MemoryFormat format) const {
  if (format == MemoryFormat::contiguous) return contiguous();
  if (is_channels_last()) return *this;
  DLF_CHECK(dim() == 4, "contiguous(channels_last): needs a 4-D [N, C, H, W] tensor, got shape ",
            shape_str(shape()));
  return dispatch1(copy_op, {*this},
                   {{"dtype", dtype()}, {"device", device()}, {"channels_last", true}});
}
Tensor Tensor::clone() const {
  return dispatch1(copy_op, {*this}, {{"dtype", dtype()}, {"device", device()}});
}
Tensor Tensor::to(DType dtype) const {
  return dtype == this->dtype() ? *this : copy_to(*this, dtype, device());
}
Tensor Tensor::to(Device device) const {
  return device == this->device() ? *this : copy_to(*this, dtype(), device);
}

Tensor& Tensor::copy_(const Tensor& src) {
  dispatch(copy_into_op, {*this, src});
  return *this;
}

}  // namespace dlf
