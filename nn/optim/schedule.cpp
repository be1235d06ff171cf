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

namespace dlf::nn::optim {

LRScheduler::LRScheduler(Optimizer& optimizer) : optimizer_(optimizer) {
  for (const ParamGroup& g : optimizer.param_groups()) initial_.push_back(*g.lr);
}

void LRScheduler::step() {
  ++step_;
  apply();
}

void LRScheduler::set_step(int64_t step) {
  DLF_CHECK(step >= 0, "LRScheduler::set_step(", step, "): the step must not be negative");
  step_ = step;
  apply();
}

void LRScheduler::apply() {
  std::vector<ParamGroup>& groups = optimizer_.param_groups();
  for (size_t g = 0; g < groups.size(); ++g) groups[g].lr = lr_at(step_, initial_[g]);
}

LambdaLR::LambdaLR(Optimizer& optimizer, std::function<double(int64_t)> factor)
    : LRScheduler(optimizer), factor_(std::move(factor)) {
  DLF_CHECK(bool(factor_), "LambdaLR: no factor function");
  apply();
}

double LambdaLR::lr_at(int64_t step, double initial) const { return initial * factor_(step); }

StepLR::StepLR(Optimizer& optimizer, int64_t step_size, double gamma)
    : LRScheduler(optimizer), step_size_(step_size), gamma_(gamma) {
  DLF_CHECK(step_size > 0, "StepLR: step_size must be positive, got ", step_size);
  apply();
}

double StepLR::lr_at(int64_t step, double initial) const {
  return step_lr(step, initial, step_size_, gamma_);
}

CosineAnnealingLR::CosineAnnealingLR(Optimizer& optimizer, int64_t t_max, double eta_min)
    : LRScheduler(optimizer), t_max_(t_max), eta_min_(eta_min) {
  DLF_CHECK(t_max > 0, "CosineAnnealingLR: t_max must be positive, got ", t_max);
  apply();
}

double CosineAnnealingLR::lr_at(int64_t step, double initial) const {
  if (step >= t_max_) return eta_min_;
  const double ratio = static_cast<double>(step) / static_cast<double>(t_max_);
  return eta_min_ + 0.5 * (1 + std::cos(std::numbers::pi * ratio)) * (initial - eta_min_);
}

WarmupCosineLR::WarmupCosineLR(Optimizer& optimizer, int64_t warmup, int64_t total,
                               double min_ratio)
    : LRScheduler(optimizer), warmup_(warmup), total_(total), min_ratio_(min_ratio) {
  DLF_CHECK(warmup >= 0 && total > warmup && min_ratio >= 0 && min_ratio <= 1,
            "WarmupCosineLR: need 0 <= warmup (", warmup, ") < total (", total,
            ") and min_ratio in [0, 1], got ", min_ratio);
  apply();
}

double WarmupCosineLR::lr_at(int64_t step, double initial) const {
  return warmup_cosine_lr(step, initial, warmup_, total_, min_ratio_ * initial);
}

}  // namespace dlf::nn::optim
