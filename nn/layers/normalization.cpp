#include <dlf/core/factory.h>
#include <dlf/core/ops/normalization.h>
#include <dlf/nn/normalization.h>

namespace dlf::nn {

LayerNorm::LayerNorm(int64_t size, double epsilon, bool affine, DType dtype)
    : dim(size), eps(epsilon) {
  DLF_CHECK(dim > 0, "LayerNorm: dim must be positive, got ", dim);
  if (affine) {
    weight = register_parameter("weight", ones({dim}, {.dtype = dtype}));
    bias = register_parameter("bias", zeros({dim}, {.dtype = dtype}));
  }
}

Tensor LayerNorm::forward(const Tensor& x) const {
  return layer_norm(x, {x.size(-1)}, weight, bias, eps);
}

RMSNorm::RMSNorm(int64_t dim, double epsilon, DType dtype) : eps(epsilon) {
  DLF_CHECK(dim > 0, "RMSNorm: dim must be positive, got ", dim);
  weight = register_parameter("weight", ones({dim}, {.dtype = dtype}));
}

Tensor RMSNorm::forward(const Tensor& x) const { return rms_norm(x, weight, eps); }

GroupNorm::GroupNorm(int64_t groups, int64_t channels, double eps, DType dtype)
    : groups(groups), eps(eps) {
  DLF_CHECK(groups > 0 && channels % groups == 0, "GroupNorm: ", channels,
            " channels do not split into ", groups, " groups");
  weight = register_parameter("weight", ones({channels}, {.dtype = dtype}));
  bias = register_parameter("bias", zeros({channels}, {.dtype = dtype}));
}

Tensor GroupNorm::forward(const Tensor& x) const {
  return group_norm(x, groups, weight, bias, eps);
}

Tensor GroupNorm::forward_silu(const Tensor& x) const {
  return group_norm_silu(x, groups, weight, bias, eps);
}

std::string LayerNorm::extra_repr() const {
  return detail::concat("(", dim, "), eps=", eps,
                        ", elementwise_affine=", weight.defined() ? "true" : "false");
}

std::string RMSNorm::extra_repr() const {
  return detail::concat("(", weight.size(0), ",), eps=", eps);
}

std::string GroupNorm::extra_repr() const {
  return detail::concat(groups, ", ", weight.size(0), ", eps=", eps);
}

}  // namespace dlf::nn
