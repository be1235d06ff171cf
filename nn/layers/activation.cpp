#include <dlf/core/ops/nn_ops.h>
#include <dlf/nn/activation.h>

namespace dlf::nn {

Dropout::Dropout(double p, Generator* gen) : p(p), gen_(gen) {
  DLF_CHECK(p >= 0 && p < 1, "Dropout: p must be in [0, 1), got ", p);
}

Tensor Dropout::forward(const Tensor& x) const { return dropout(x, p, is_training(), gen_); }

}  // namespace dlf::nn
