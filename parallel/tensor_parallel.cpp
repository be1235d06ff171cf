#include <dlf/autograd/function.h>
#include <dlf/core/factory.h>
#include <dlf/core/ops/elementwise.h>
#include <dlf/nn/init.h>
#include <dlf/parallel/tensor_parallel.h>

#include <cmath>

namespace dlf::parallel {
namespace {

Tensor summed(const Tensor& x, Communicator& group) {
  Tensor y = x.contiguous().clone();
  group.allreduce(y);
  return y;
}

int64_t share(int64_t size, const Communicator& group, const char* what) {
  DLF_CHECK(size % group.size() == 0, what, ": ", size, " features do not split over ",
            group.size(), " tensor-parallel ranks");
  return size / group.size();
}

}  // namespace

Tensor copy_to_tp_region(const Tensor& x, Communicator& group) {
  if (group.size() == 1) return x;
  return autograd::apply_function(
      "copy_to_tp_region", {x}, [](const autograd::Tensors& in) { return in; },
      [&group](const autograd::Tensors& grads) -> autograd::Tensors {
        return {summed(grads[0], group)};
      })[0];
}

Tensor reduce_from_tp_region(const Tensor& x, Communicator& group) {
  if (group.size() == 1) return x;
  return autograd::apply_function(
      "reduce_from_tp_region", {x},
      [&group](const autograd::Tensors& in) -> autograd::Tensors { return {summed(in[0], group)}; },
      [](const autograd::Tensors& grads) { return grads; })[0];
}

Tensor gather_from_tp_region(const Tensor& x, Communicator& group) {
  if (group.size() == 1) return x;
  const int64_t n = group.size(), rank = group.rank(), last = x.dim() - 1, k = x.size(last);
  return autograd::apply_function(
      "gather_from_tp_region", {x},
      [&group, n, last, k](const autograd::Tensors& in) -> autograd::Tensors {
        // allgather concatenates dim 0: gather [k, rest] and put the ranks' blocks last.
        const Tensor& t = in[0];
        const Tensor rows = t.reshape({-1, k}).transpose(0, 1).contiguous();  // [k, M]
        const Tensor all = group.allgather(rows);                             // [n·k, M]
        Shape shape = t.shape();
        shape[last] = n * k;
        return {all.transpose(0, 1).contiguous().reshape(shape)};
      },
      [rank, last, k](const autograd::Tensors& grads) -> autograd::Tensors {
        return {grads[0].narrow(last, rank * k, k).contiguous()};
      })[0];
}

ColumnParallelLinear::ColumnParallelLinear(int64_t in, int64_t out, Communicator& group,
                                           nn::LinearOptions options, bool gather_output)
    : group_(group), gather_output_(gather_output) {
  const int64_t local = share(out, group, "ColumnParallelLinear");
  weight = register_parameter("weight", Tensor::empty({local, in}, options.dtype));
  if (options.bias) bias = register_parameter("bias", Tensor::empty({local}, options.dtype));
  const double bound = 1 / std::sqrt(double(in));  // nn::Linear's, from the whole layer's fan-in
  nn::init::uniform_(weight, -bound, bound);
  if (bias.defined()) nn::init::uniform_(bias, -bound, bound);
}

Tensor ColumnParallelLinear::forward(const Tensor& x) const {
  const Tensor y = linear(copy_to_tp_region(x, group_), weight, bias);
  return gather_output_ ? gather_from_tp_region(y, group_) : y;
}

RowParallelLinear::RowParallelLinear(int64_t in, int64_t out, Communicator& group,
                                     nn::LinearOptions options)
    : group_(group) {
  const int64_t local = share(in, group, "RowParallelLinear");
  weight = register_parameter("weight", Tensor::empty({out, local}, options.dtype));
  if (options.bias) bias = register_parameter("bias", Tensor::empty({out}, options.dtype));
  const double bound = 1 / std::sqrt(double(in));
  nn::init::uniform_(weight, -bound, bound);
  if (bias.defined()) nn::init::uniform_(bias, -bound, bound);
}

Tensor RowParallelLinear::forward(const Tensor& x) const {
  const Tensor y = reduce_from_tp_region(linear(x, weight), group_);
  return bias.defined() ? y + bias : y;
}

}  // namespace dlf::parallel
