// Evaluation metrics.
#pragma once
#include <dlf/core/tensor.h>

namespace dlf::nn {

/// The fraction of labelled positions whose largest logit (the first, on ties) is at the
/// label: logits [..., C], integer labels of the leading shape, positions labelled
/// `ignore_index` (cross_entropy's -100, the unmasked tokens of a masked-LM batch) left out;
/// 0 when no position is labelled.
double accuracy(const Tensor& logits, const Tensor& labels, int64_t ignore_index = -100);

}  // namespace dlf::nn
