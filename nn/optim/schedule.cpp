#include <dlf/error.h>
#include <dlf/nn/optim/schedule.h>

#include <cmath>
#include <numbers>

namespace dlf::nn::optim {

double warmup_cosine_lr(int64_t step, double base, int64_t warmup, int64_t total, double min_lr) {
  DLF_CHECK(warmup >= 0 && total > warmup, "warmup_cosine_lr: need 0 <= warmup (", warmup,
            ") < total (", total, ")");
  if (step < warmup) return base * static_cast<double>(step + 1) / static_cast<double>(warmup);
  if (step >= total) return min_lr;
  const double ratio = static_cast<double>(step - warmup) / static_cast<double>(total - warmup);
  return min_lr + 0.5 * (1 + std::cos(std::numbers::pi * ratio)) * (base - min_lr);
}

double step_lr(int64_t step, double base, int64_t step_size, double gamma) {
  DLF_CHECK(step_size > 0, "step_lr: step_size must be positive, got ", step_size);
  return base * std::pow(gamma, static_cast<double>(step / step_size));
}

}  // namespace dlf::nn::optim
