#include <dlf/core/factory.h>
#include <dlf/core/ops/elementwise.h>
#include <dlf/core/ops/reduce.h>
#include <dlf/nn/metrics.h>

namespace dlf::nn {

double accuracy(const Tensor& logits, const Tensor& labels, int64_t ignore_index) {
  DLF_CHECK(logits.dim() == labels.dim() + 1 &&
                Shape(logits.shape().begin(), logits.shape().end() - 1) == labels.shape(),
            "accuracy: logits ", shape_str(logits.shape()), " do not match labels ",
            shape_str(labels.shape()), " (expected [..., classes] over the labels' shape)");
  const Tensor l = labels.to(DType::i64);
  const Tensor ignored =
      full({}, double(ignore_index), {.dtype = DType::i64, .device = l.device()});
  const Tensor labelled = ne(l, ignored).to(DType::f64);
  const double count = sum(labelled).item<double>();
  if (count == 0) return 0;
  const Tensor hits = eq(argmax(logits.detach(), -1), l).to(DType::f64) * labelled;
  return sum(hits).item<double>() / count;
}

}  // namespace dlf::nn
