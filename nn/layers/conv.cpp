#include <dlf/nn/conv.h>
#include <dlf/nn/init.h>

namespace dlf::nn {

Conv2d::Conv2d(int64_t in, int64_t out, Pair kernel, Conv2dOptions options, bool with_bias,
               DType dtype)
    : options(options) {
  DLF_CHECK(in > 0 && out > 0 && options.groups > 0 && in % options.groups == 0 &&
                out % options.groups == 0,
            "Conv2d: ", in, " in and ", out, " out channels must be positive multiples of ",
            options.groups, " groups");
  DLF_CHECK(kernel[0] > 0 && kernel[1] > 0, "Conv2d: kernel must be positive, got ", kernel[0], "x",
            kernel[1]);
  weight = register_parameter(
      "weight", Tensor::empty({out, in / options.groups, kernel[0], kernel[1]}, dtype));
  if (with_bias) bias = register_parameter("bias", Tensor::empty({out}, dtype));
  init::linear_default_(weight, bias);
}

Tensor Conv2d::forward(const Tensor& x) const { return conv2d(x, weight, bias, options); }

std::string Conv2d::extra_repr() const {
  const Shape& w = weight.shape();
  std::string text =
      detail::concat(w[1] * options.groups, ", ", w[0], ", kernel_size=(", w[2], ", ", w[3],
                     "), stride=(", options.stride[0], ", ", options.stride[1], ")");
  if (options.padding != Pair{0, 0})
    text += detail::concat(", padding=(", options.padding[0], ", ", options.padding[1], ")");
  if (options.groups != 1) text += detail::concat(", groups=", options.groups);
  if (!bias.defined()) text += ", bias=false";
  return text;
}

}  // namespace dlf::nn
