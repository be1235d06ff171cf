#include <dlf/autograd/function.h>
#include <dlf/autograd/grad_mode.h>
#include <dlf/core/factory.h>
#include <dlf/core/ops/elementwise.h>
#include <dlf/core/ops/nn_ops.h>
#include <dlf/core/ops/reduce.h>
#include <dlf/nn/init.h>
#include <dlf/parallel/tensor_parallel.h>

#include <algorithm>
#include <cmath>
#include <limits>

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
    : nn::Linear(in, share(out, group, "ColumnParallelLinear"), options),  // fan-in unchanged
      group_(group),
      gather_output_(gather_output) {}

Tensor ColumnParallelLinear::forward(const Tensor& x, Activation activation) const {
  const Tensor y = linear(copy_to_tp_region(x, group_), weight, bias, activation);
  return gather_output_ ? gather_from_tp_region(y, group_) : y;
}

RowParallelLinear::RowParallelLinear(int64_t in, int64_t out, Communicator& group,
                                     nn::LinearOptions options)
    : nn::Linear(share(in, group, "RowParallelLinear"), out, options), group_(group) {
  const double bound = 1 / std::sqrt(double(in));  // the whole layer's fan-in
  nn::init::uniform_(weight, -bound, bound);
  if (bias.defined()) nn::init::uniform_(bias, -bound, bound);
}

Tensor RowParallelLinear::forward(const Tensor& x, Activation activation) const {
  DLF_CHECK(activation == Activation::none,
            "RowParallelLinear: an activation must follow the sum over the group");
  if (group_.size() == 1) return linear(x, weight, bias);
  // The bias after the sum, so that every rank holds its whole gradient; in the sum's dtype, as
  // the linear with its bias gives it (bf16 under autocast).
  const Tensor y = reduce_from_tp_region(linear(x, weight), group_);
  return bias.defined() ? y + bias.to(y.dtype()) : y;
}

nn::LinearMaker megatron_linears(Communicator& group) {
  return [&group](int64_t in, int64_t out, nn::LinearParallel split,
                  nn::LinearOptions options) -> std::shared_ptr<nn::Linear> {
    if (split == nn::LinearParallel::column)
      return std::make_shared<ColumnParallelLinear>(in, out, group, options);
    return std::make_shared<RowParallelLinear>(in, out, group, options);
  };
}

int64_t vocab_shard_rows(int64_t vocab, int ranks) { return (vocab + ranks - 1) / ranks; }

VocabParallelEmbedding::VocabParallelEmbedding(int64_t vocab, int64_t dim, Communicator& group,
                                               DType dtype)
    : group_(group) {
  const int64_t rows = vocab_shard_rows(vocab, group.size());
  first_ = group.rank() * rows;
  weight = register_parameter("weight", Tensor::empty({rows, dim}, dtype));
  nn::init::normal_(weight);
  const int64_t words = std::clamp<int64_t>(vocab - first_, 0, rows);
  if (words < rows) {
    autograd::NoGradGuard no_grad;
    Tensor padding = weight.narrow(0, words, rows - words);
    padding.copy_(zeros_like(padding));
  }
}

namespace {
// The ids outside [first, first + rows): which ones, and all ids made local (0 where outside).
std::pair<Tensor, Tensor> local_ids(const Tensor& ids, int64_t first, int64_t rows) {
  const Tensor local = ids - double(first);
  const Tensor outside =
      where(lt(local, full({}, 0, {.dtype = local.dtype(), .device = local.device()})),
            full({}, 1, {.dtype = DType::b8, .device = local.device()}),
            ge(local, full({}, rows, {.dtype = local.dtype(), .device = local.device()})));
  return {outside, masked_fill(local, outside, 0)};
}
}  // namespace

Tensor VocabParallelEmbedding::forward(const Tensor& indices) const {
  if (group_.size() == 1) return embedding(weight, indices);
  const auto [outside, local] = local_ids(indices, first_, weight.size(0));
  const Tensor partial = masked_fill(embedding(weight, local), outside.unsqueeze(-1), 0);
  return reduce_from_tp_region(partial, group_);
}

Tensor vocab_parallel_cross_entropy(const Tensor& logits, const Tensor& targets,
                                    Communicator& group, int64_t vocab) {
  DLF_CHECK(logits.dim() == 2 && targets.dim() == 1 && targets.size(0) == logits.size(0),
            "vocab_parallel_cross_entropy: expected logits [N, V/n] and targets [N], got ",
            shape_str(logits.shape()), " and ", shape_str(targets.shape()));
  const int64_t rows = logits.size(1), first = group.rank() * rows;
  const int64_t words = vocab > 0 ? std::clamp<int64_t>(vocab - first, 0, rows) : rows;
  if (group.size() == 1 && words == rows) return cross_entropy(logits, targets);
  const Tensor columns = arange(double(rows), {.dtype = DType::i64, .device = logits.device()});
  // In f32 at least, as Megatron-LM's (logits.float()): in bf16 the shifted exponentials, their
  // sums and the loss itself would keep 8 bits.
  Tensor scores = dtype_size(logits.dtype()) < 4 ? logits.to(DType::f32) : logits;
  if (words < rows) {  // padding: exp(-inf) = 0 in the sum, and no gradient
    const Tensor padding =
        ge(columns, full({}, double(words), {.dtype = DType::i64, .device = logits.device()}));
    scores = masked_fill(scores, padding.unsqueeze(0), -std::numeric_limits<double>::infinity());
  }
  // The row max is a constant shift (no gradient), taken over the whole vocabulary.
  Tensor shift = max(scores.detach(), {1}, true).contiguous();
  group.allreduce(shift, ReduceOp::max);
  const Tensor shifted = scores - shift;
  const Tensor sum_exp = reduce_from_tp_region(sum(exp(shifted), {1}), group);
  const auto [outside, local] = local_ids(targets, first, rows);
  const Tensor miss = ne(columns.unsqueeze(0), local.unsqueeze(1));  // [N, k]: not the target
  const Tensor target_logit = masked_fill(sum(masked_fill(shifted, miss, 0), {1}), outside, 0);
  return mean(log(sum_exp) - reduce_from_tp_region(target_logit, group));
}

}  // namespace dlf::parallel
