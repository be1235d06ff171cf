// Evaluation metrics.
#pragma once
#include <dlf/core/tensor.h>

namespace dlf::nn {

/// The fraction of rows of logits [N, C] whose largest entry (the first, on ties) is at the
/// label, labels integer [N].
double accuracy(const Tensor& logits, const Tensor& labels);

}  // namespace dlf::nn
