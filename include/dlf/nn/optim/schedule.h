// Learning-rate schedules as functions of the step (0-based).
#pragma once
#include <cstdint>

namespace dlf::nn::optim {

/// Linear warmup to `base` over `warmup` steps, then a cosine decay to `min_lr` at `total`,
/// and `min_lr` after it (nanoGPT's schedule).
double warmup_cosine_lr(int64_t step, double base, int64_t warmup, int64_t total, double min_lr);
/// base · gamma^(step / step_size).
double step_lr(int64_t step, double base, int64_t step_size, double gamma);

}  // namespace dlf::nn::optim
