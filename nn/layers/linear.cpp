#include <dlf/core/factory.h>
#include <dlf/core/ops/nn_ops.h>
#include <dlf/nn/init.h>
#include <dlf/nn/linear.h>

namespace dlf::nn {

Linear::Linear(int64_t in, int64_t out, LinearOptions options) {
  DLF_CHECK(in > 0 && out > 0, "Linear: sizes must be positive, got in ", in, ", out ", out);
  weight = register_parameter("weight", Tensor::empty({out, in}, options.dtype));
  if (options.bias) bias = register_parameter("bias", Tensor::empty({out}, options.dtype));
  init::linear_default_(weight, bias);
}

Tensor Linear::forward(const Tensor& x, Activation activation) const {
  return linear(x, weight, bias, activation);
}

std::shared_ptr<Linear> make_linear(const LinearMaker& maker, int64_t in, int64_t out,
                                    LinearParallel split, LinearOptions options) {
  if (maker) return maker(in, out, split, options);
  return std::make_shared<Linear>(in, out, options);
}

Embedding::Embedding(int64_t num, int64_t dim, DType dtype) {
  DLF_CHECK(num > 0 && dim > 0, "Embedding: sizes must be positive, got ", num, " x ", dim);
  weight = register_parameter("weight", Tensor::empty({num, dim}, dtype));
  init::normal_(weight);
}

Tensor Embedding::forward(const Tensor& indices) const { return embedding(weight, indices); }

std::string Linear::extra_repr() const {
  return detail::concat("in_features=", weight.size(1), ", out_features=", weight.size(0),
                        ", bias=", bias.defined() ? "true" : "false");
}

std::string Embedding::extra_repr() const {
  return detail::concat(weight.size(0), ", ", weight.size(1));
}

}  // namespace dlf::nn
