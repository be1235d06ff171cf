// DDPM (Ho et al. 2020) around a noise-predicting UNet: the linear beta schedule, the forward
// noising q(x_t | x_0), the training loss and ancestral sampling (diffusers' DDPMScheduler:
// "leading" timestep spacing, x_0 clipped to [-1, 1], the posterior's fixed small variance).
#pragma once
#include <cstdint>
#include <functional>
#include <vector>

#include <dlf/core/random.h>
#include <dlf/models/unet.h>

namespace dlf::models {

/// DDPM's noise schedule, training loss and sampler (Ho et al. 2020).
class DDPM {
 public:
  /// betas linear from beta_start to beta_end over `steps` timesteps (the peer's 1e-4 .. 0.02
  /// over 1000).
  explicit DDPM(int64_t steps = 1000, double beta_start = 1e-4, double beta_end = 0.02);

  /// Timesteps T.
  int64_t steps() const { return int64_t(betas_.size()); }
  /// Β_t, t = 0..T-1.
  const std::vector<double>& betas() const { return betas_; }
  /// ᾱ_t = Π_{s<=t} (1 - β_s).
  const std::vector<double>& alphas_cumprod() const { return alphas_cumprod_; }

  /// x_t = sqrt(ᾱ_t)·x0 + sqrt(1 - ᾱ_t)·noise, with x0 and noise [B, ...] and integer
  /// timesteps t [B] in 0..steps-1 (one per image).
  Tensor add_noise(const Tensor& x0, const Tensor& noise, const Tensor& t) const;

  /// The training loss on clean images x0 [B, C, H, W] in [-1, 1]: the mean squared error
  /// between the noise drawn for each image (with a uniform timestep) and the model's
  /// prediction of it. Draws t and the noise from `gen`.
  Tensor loss(const UNet& model, const Tensor& x0, Generator& gen) const;
  /// The same loss with the noise [B, C, H, W] and timesteps t [B] given.
  Tensor loss(const UNet& model, const Tensor& x0, const Tensor& noise, const Tensor& t) const;

  /// `count` images [count, C, image, image] in [-1, 1] (the model config's), without autograd.
  /// From x ~ N(0, I) it denoises at the timesteps t_i = i·r for i = n-1, ..., 0, r =
  /// steps / n (integer division; n = sampling_steps, 0 meaning every step): at each, with t'
  /// = t - r (ᾱ_t' = 1 below 0), ε = model(x, t), x0 = clip((x - sqrt(1-ᾱ_t)·ε)/sqrt(ᾱ_t),
  /// ±1), β = 1 - ᾱ_t/ᾱ_t', x ← (sqrt(ᾱ_t')·β·x0 + sqrt(1-β)·(1-ᾱ_t')·x) / (1-ᾱ_t) +
  /// σ·z, σ² = β·(1-ᾱ_t')/(1-ᾱ_t), z ~ N(0, I) (none at the last step). n = steps is the
  /// ancestral sampler of the paper.
  /// `on_step(done, n)` after each denoising step, when given.
  Tensor sample(const UNet& model, int64_t count, Generator& gen, int64_t sampling_steps = 0,
                const std::function<void(int64_t done, int64_t total)>& on_step = {}) const;

 private:
  std::vector<double> betas_, alphas_cumprod_;
  // sqrt(ᾱ_t) and sqrt(1 - ᾱ_t) as [steps, 1] f64 tables on the host, gathered per image by
  // tensor ops (a step reads no timestep on the host, so graph capture can record it).
  Tensor signal_, noise_scale_;
};

}  // namespace dlf::models
