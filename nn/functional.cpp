#include <dlf/core/ops/reduce.h>
#include <dlf/nn/functional.h>

namespace dlf::nn::functional {

Tensor mse_loss(const Tensor& input, const Tensor& target, Reduction reduction) {
  DLF_CHECK(input.shape() == target.shape(), "mse_loss: input ", shape_str(input.shape()),
            " and target ", shape_str(target.shape()), " differ in shape");
  const Tensor d = input - target;
  const Tensor sq = d * d;
  switch (reduction) {
    case Reduction::none:
      return sq;
    case Reduction::sum:
      return sum(sq);
    case Reduction::mean:
      break;
  }
  return mean(sq);
}

Tensor silu(const Tensor& x) { return dlf::silu(x); }

}  // namespace dlf::nn::functional
