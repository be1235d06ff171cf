// Parameter initialisation, in place and outside autograd (PyTorch's torch.nn.init).
#pragma once
#include <dlf/core/random.h>
#include <dlf/core/tensor.h>

namespace dlf::nn::init {

/// Fan-in and fan-out of a weight: [out, in] for Linear, [out, in/groups, kh, kw] for Conv2d.
struct Fans {
  /// fan-in and fan-out
  ///@{
  int64_t in, out;
  ///@}
};
Fans fans(const Tensor& weight);  ///< fan-in and fan-out of a weight [out, in, ...]

void constant_(const Tensor& t, double value);  ///< every element `value`
void zeros_(const Tensor& t);                   ///< zeros
void ones_(const Tensor& t);                    ///< ones
/// N(mean, std^2)
void normal_(const Tensor& t, double mean = 0, double std = 1, Generator* gen = nullptr);
/// U(low, high)
void uniform_(const Tensor& t, double low = 0, double high = 1, Generator* gen = nullptr);
/// Glorot: U(±gain·sqrt(6/(fan_in+fan_out))) and N(0, gain·sqrt(2/(fan_in+fan_out))).
void xavier_uniform_(const Tensor& t, double gain = 1, Generator* gen = nullptr);
/// N(0, gain^2 · 2 / (fan_in + fan_out))
void xavier_normal_(const Tensor& t, double gain = 1, Generator* gen = nullptr);
/// He, fan-in mode, leaky-ReLU gain sqrt(2/(1+a²)): U(±gain·sqrt(3/fan_in)), N(0,
/// gain/sqrt(fan_in)). a = sqrt(5) is PyTorch's default for Linear and Conv2d weights:
/// U(±1/sqrt(fan_in)).
void kaiming_uniform_(const Tensor& t, double a = 0, Generator* gen = nullptr);
/// N(0, gain(a)^2 / fan_in), He et al.'s.
void kaiming_normal_(const Tensor& t, double a = 0, Generator* gen = nullptr);

/// PyTorch's default for Linear and Conv2d: weight kaiming_uniform_(a = sqrt(5)) and bias
/// (if defined) uniform in ±1/sqrt(fan_in).
void linear_default_(const Tensor& weight, const Tensor& bias, Generator* gen = nullptr);

}  // namespace dlf::nn::init
