// Learning-rate schedules: the formulas, as functions of the step (0-based), and scheduler
// objects that apply them to an optimizer's groups, as torch.optim.lr_scheduler does.
#pragma once
#include <cstdint>
#include <functional>
#include <vector>

#include <dlf/nn/optim/optimizer.h>

namespace dlf::nn::optim {

/// Linear warmup to `base` over `warmup` steps, then a cosine decay to `min_lr` at `total`,
/// and `min_lr` after it (nanoGPT's schedule).
double warmup_cosine_lr(int64_t step, double base, int64_t warmup, int64_t total, double min_lr);
/// base · gamma^(step / step_size).
double step_lr(int64_t step, double base, int64_t step_size, double gamma);

/// Sets each group's learning rate from the group's initial one (its lr when the scheduler was
/// made) and the step: at construction for step 0, then for the next step at each step().
/// Call step() after the optimizer's.
class LRScheduler {
 public:
  /// Schedules `optimizer`'s groups from their rates now.
  explicit LRScheduler(Optimizer& optimizer);
  virtual ~LRScheduler() = default;
  LRScheduler(const LRScheduler&) = delete;
  LRScheduler& operator=(const LRScheduler&) = delete;
  void step();  ///< one step on: sets the rates for it
  /// Goes to `step` (a resumed run) and sets the rates for it.
  void set_step(int64_t step);
  /// The steps taken.
  int64_t last_step() const { return step_; }

 protected:
  /// The rate at `step` of a group that started at `initial`.
  virtual double lr_at(int64_t step, double initial) const = 0;
  /// Sets the rates for the current step; the constructors of subclasses call it.
  void apply();

 private:
  Optimizer& optimizer_;
  std::vector<double> initial_;
  int64_t step_ = 0;
};

/// initial · factor(step).
class LambdaLR : public LRScheduler {
 public:
  /// Lr = initial · factor(step)
  LambdaLR(Optimizer& optimizer, std::function<double(int64_t step)> factor);

 protected:
  double lr_at(int64_t step, double initial) const override;

 private:
  std::function<double(int64_t)> factor_;
};

/// initial · gamma^(step / step_size).
class StepLR : public LRScheduler {
 public:
  /// Lr = initial · gamma^(step / step_size)
  StepLR(Optimizer& optimizer, int64_t step_size, double gamma = 0.1);

 protected:
  double lr_at(int64_t step, double initial) const override;

 private:
  int64_t step_size_;
  double gamma_;
};

/// eta_min + (initial - eta_min)·(1 + cos(π·step / t_max)) / 2, eta_min after t_max.
class CosineAnnealingLR : public LRScheduler {
 public:
  /// From initial to eta_min over t_max steps, a half cosine.
  CosineAnnealingLR(Optimizer& optimizer, int64_t t_max, double eta_min = 0);

 protected:
  double lr_at(int64_t step, double initial) const override;

 private:
  int64_t t_max_;
  double eta_min_;
};

/// warmup_cosine_lr of each group: warmup to its initial rate, then a cosine down to
/// min_ratio · initial at `total` (what `dlf train` runs).
class WarmupCosineLR : public LRScheduler {
 public:
  /// Linear warmup over `warmup` steps, then a cosine to min_ratio · initial at `total`.
  WarmupCosineLR(Optimizer& optimizer, int64_t warmup, int64_t total, double min_ratio = 0.1);

 protected:
  double lr_at(int64_t step, double initial) const override;

 private:
  int64_t warmup_, total_;
  double min_ratio_;
};

}  // namespace dlf::nn::optim
