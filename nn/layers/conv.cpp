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

}  // namespace dlf::nn
