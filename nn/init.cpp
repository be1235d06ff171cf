#include <dlf/autograd/grad_mode.h>
#include <dlf/core/factory.h>
#include <dlf/core/ops/elementwise.h>
#include <dlf/nn/init.h>

#include <cmath>

namespace dlf::nn::init {
namespace {

// Draws in f32 (or f64 for f64 tensors) and converts on copy, so a bf16 weight gets the
// same values as its f32 twin, rounded.
TensorOptions draw_options(const Tensor& t) {
  return {.dtype = t.dtype() == DType::f64 ? DType::f64 : DType::f32, .device = t.device()};
}

void assign(const Tensor& t, const Tensor& value) {
  autograd::NoGradGuard no_grad;
  Tensor target = t;
  target.copy_(value);
}

double kaiming_gain(double a) { return std::sqrt(2.0 / (1 + a * a)); }

}  // namespace

Fans fans(const Tensor& weight) {
  DLF_CHECK(weight.dim() >= 2, "init: fan-in and fan-out need a weight of at least 2 dims, got ",
            shape_str(weight.shape()));
  int64_t receptive = 1;
  for (int64_t d = 2; d < weight.dim(); ++d) receptive *= weight.size(d);
  return {weight.size(1) * receptive, weight.size(0) * receptive};
}

void constant_(const Tensor& t, double value) { assign(t, full({}, value, draw_options(t))); }
void zeros_(const Tensor& t) { constant_(t, 0); }
void ones_(const Tensor& t) { constant_(t, 1); }

void normal_(const Tensor& t, double mean, double std, Generator* gen) {
  assign(t, randn(t.shape(), draw_options(t), gen) * std + mean);
}

void uniform_(const Tensor& t, double low, double high, Generator* gen) {
  assign(t, rand(t.shape(), draw_options(t), gen) * (high - low) + low);
}

void xavier_uniform_(const Tensor& t, double gain, Generator* gen) {
  const Fans f = fans(t);
  const double bound = gain * std::sqrt(6.0 / double(f.in + f.out));
  uniform_(t, -bound, bound, gen);
}

void xavier_normal_(const Tensor& t, double gain, Generator* gen) {
  const Fans f = fans(t);
  normal_(t, 0, gain * std::sqrt(2.0 / double(f.in + f.out)), gen);
}

void kaiming_uniform_(const Tensor& t, double a, Generator* gen) {
  const double bound = kaiming_gain(a) * std::sqrt(3.0 / double(fans(t).in));
  uniform_(t, -bound, bound, gen);
}

void kaiming_normal_(const Tensor& t, double a, Generator* gen) {
  normal_(t, 0, kaiming_gain(a) / std::sqrt(double(fans(t).in)), gen);
}

void linear_default_(const Tensor& weight, const Tensor& bias, Generator* gen) {
  kaiming_uniform_(weight, std::sqrt(5.0), gen);
  if (!bias.defined()) return;
  const double bound = 1 / std::sqrt(double(fans(weight).in));
  uniform_(bias, -bound, bound, gen);
}

}  // namespace dlf::nn::init
