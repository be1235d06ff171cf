#include <dlf/core/ops/reduce.h>
#include <dlf/nn/metrics.h>

namespace dlf::nn {

double accuracy(const Tensor& logits, const Tensor& labels) {
  DLF_CHECK(logits.dim() == 2 && labels.dim() == 1 && labels.size(0) == logits.size(0) &&
                logits.size(0) > 0,
            "accuracy: expected logits [N, C] and labels [N] with N > 0, got ",
            shape_str(logits.shape()), " and ", shape_str(labels.shape()));
  const std::vector<int64_t> predicted = argmax(logits.detach(), 1).to_vector<int64_t>();
  const std::vector<int64_t> truth = labels.to_vector<int64_t>();
  int64_t right = 0;
  for (size_t i = 0; i < truth.size(); ++i) right += predicted[i] == truth[i];
  return double(right) / double(truth.size());
}

}  // namespace dlf::nn
