// Anomaly detection, as torch.autograd.detect_anomaly: inside the scope every op — forward and
// backward — has its outputs checked, and the first op that turns finite inputs into NaN or
// infinity throws a dlf::Error naming it (and, in backward, the gradient it was computing).
// It reads every output, so it costs time: a debugging aid, off by default.
#pragma once
#include <memory>

#include <dlf/core/tensor.h>

namespace dlf {

/// True when every element of a floating-point tensor is finite (other dtypes: true). On a
/// device without data (meta), true.
bool all_finite(const Tensor& t);

}  // namespace dlf

namespace dlf::autograd {

/// Checks every op dispatched on this thread while it lives.
class DetectAnomalyGuard {
 public:
  DetectAnomalyGuard();
  ~DetectAnomalyGuard();
  DetectAnomalyGuard(const DetectAnomalyGuard&) = delete;
  DetectAnomalyGuard& operator=(const DetectAnomalyGuard&) = delete;

 private:
  struct Checker;
  std::unique_ptr<Checker> checker_;
};

}  // namespace dlf::autograd
