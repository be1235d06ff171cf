// Checks analytic gradients against central finite differences, in f64.
#pragma once
#include <functional>
#include <string>
#include <vector>

#include <dlf/core/tensor.h>

namespace dlf::autograd {

/// Finite-difference check settings.
struct GradcheckOptions {
  double eps = 1e-6;   ///< finite-difference step
  double atol = 1e-6;  ///< an element passes when |analytic - numeric| <= atol + rtol*|numeric|
  double rtol = 1e-4;  ///< relative tolerance (plus atol)
  uint64_t seed = 0;   ///< for the random output projection
};

/// Where a gradient check failed, if it did.
struct GradcheckResult {
  bool ok = true;  ///< every element within tolerance
  int input = -1;  ///< where the worst element is: which input,
  Shape index;     ///< and which element of it
  /// the first failing element's analytic and numeric gradients
  ///@{
  double analytic = 0, numeric = 0;
  ///@}
  double worst_ratio = 0;   ///< worst |analytic - numeric| / tolerance (<= 1 passes)
  int64_t elements = 0;     ///< elements checked
  std::string str() const;  ///< a line for people
};

/// Checks d<fn(inputs), v>/d(input) for a fixed random v, for every element of every input
/// that requires grad. Inputs that require grad must be f64 and must not overlap themselves
/// (no expanded views). fn must be deterministic (seed any randomness inside it).
GradcheckResult gradcheck(const std::function<Tensor(const std::vector<Tensor>&)>& fn,
                          const std::vector<Tensor>& inputs, const GradcheckOptions& options = {});

}  // namespace dlf::autograd
