#include <dlf/core/ops/nn_ops.h>
#include <dlf/nn/activation.h>
#include <dlf/nn/functional.h>

namespace dlf::nn {

std::string GELU::extra_repr() const {
  return approximation == GeluApproximation::tanh ? "approximate='tanh'" : "";
}

Tensor SiLU::forward(const Tensor& x) const { return functional::silu(x); }

std::string Flatten::extra_repr() const {
  return "start_dim=" + std::to_string(start_dim) + ", end_dim=" + std::to_string(end_dim);
}

Dropout::Dropout(double probability, Generator* gen) : p(probability), gen_(gen) {
  DLF_CHECK(p >= 0 && p < 1, "Dropout: p must be in [0, 1), got ", p);
}

Tensor Dropout::forward(const Tensor& x) const { return dropout(x, p, is_training(), gen_); }

std::string Dropout::extra_repr() const { return detail::concat("p=", p); }

}  // namespace dlf::nn
