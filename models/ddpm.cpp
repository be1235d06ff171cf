#include <dlf/autograd/grad_mode.h>
#include <dlf/core/factory.h>
#include <dlf/core/ops/elementwise.h>
#include <dlf/core/ops/nn_ops.h>
#include <dlf/models/ddpm.h>
#include <dlf/nn/functional.h>

#include <cmath>

namespace dlf::models {

DDPM::DDPM(int64_t steps, double beta_start, double beta_end) {
  DLF_CHECK(steps >= 2 && 0 < beta_start && beta_start <= beta_end && beta_end < 1,
            "DDPM: bad schedule (", steps, " steps, betas ", beta_start, " .. ", beta_end, ")");
  double alpha_bar = 1;
  for (int64_t i = 0; i < steps; ++i) {
    const double beta = beta_start + (beta_end - beta_start) * double(i) / double(steps - 1);
    betas_.push_back(beta);
    alphas_cumprod_.push_back(alpha_bar *= 1 - beta);
  }
  std::vector<double> signal, noise_scale;
  for (double ab : alphas_cumprod_) {
    signal.push_back(std::sqrt(ab));
    noise_scale.push_back(std::sqrt(1 - ab));
  }
  DefaultDeviceGuard host(kCPU);
  signal_ = from_vector(signal, {steps, 1});
  noise_scale_ = from_vector(noise_scale, {steps, 1});
}

Tensor DDPM::add_noise(const Tensor& x0, const Tensor& noise, const Tensor& t) const {
  DLF_CHECK(x0.dim() >= 1 && noise.shape() == x0.shape(), "DDPM add_noise: noise ",
            shape_str(noise.shape()), " does not match the images ", shape_str(x0.shape()));
  DLF_CHECK(t.dim() == 1 && t.size(0) == x0.size(0) &&
                (t.dtype() == DType::i64 || t.dtype() == DType::i32),
            "DDPM add_noise: expected integer timesteps [", x0.size(0), "], got ",
            shape_str(t.shape()), " ", dtype_name(t.dtype()));
  Shape per_image(size_t(x0.dim()), 1);
  per_image[0] = x0.size(0);
  // Gathered by embedding(), which names a timestep outside the table.
  const auto column = [&](const Tensor& table) {
    return embedding(table.to(t.device()), t.to(DType::i64)).view(per_image).to(x0.dtype());
  };
  return column(signal_) * x0 + column(noise_scale_) * noise;
}

Tensor DDPM::loss(const UNet& model, const Tensor& x0, Generator& gen) const {
  const Tensor t = randint(0, steps(), {x0.size(0)}, {.dtype = DType::i64}, &gen);
  const Tensor noise = randn(x0.shape(), {.dtype = x0.dtype(), .device = x0.device()}, &gen);
  return loss(model, x0, noise, t);
}

Tensor DDPM::loss(const UNet& model, const Tensor& x0, const Tensor& noise, const Tensor& t) const {
  return nn::functional::mse_loss(model.forward(add_noise(x0, noise, t), t), noise);
}

Tensor DDPM::sample(const UNet& model, int64_t count, Generator& gen, int64_t sampling_steps,
                    const std::function<void(int64_t done, int64_t total)>& on_step) const {
  const int64_t n = sampling_steps == 0 ? steps() : sampling_steps;
  DLF_CHECK(count > 0 && n > 0 && n <= steps(), "DDPM sample: ", count, " images in ", n,
            " steps: both must be positive, and the steps at most ", steps());
  autograd::NoGradGuard no_grad;
  const UNetConfig& c = model.config();
  const TensorOptions options{.dtype = c.dtype};
  const Tensor lo = full({1}, -1, options), hi = full({1}, 1, options);
  const int64_t ratio = steps() / n;
  Tensor x = randn({count, c.channels, c.image, c.image}, options, &gen);
  for (int64_t i = n - 1; i >= 0; --i) {
    const int64_t t = i * ratio;
    const double ab = alphas_cumprod_[size_t(t)];
    const double ab_prev = t >= ratio ? alphas_cumprod_[size_t(t - ratio)] : 1.0;
    const double beta = 1 - ab / ab_prev;
    const Tensor eps = model.forward(x, full({count}, double(t), {.dtype = DType::i64}));
    const Tensor x0 = minimum(maximum((x - eps * std::sqrt(1 - ab)) / std::sqrt(ab), lo), hi);
    x = x0 * (std::sqrt(ab_prev) * beta / (1 - ab)) +
        x * (std::sqrt(1 - beta) * (1 - ab_prev) / (1 - ab));
    if (i > 0) {
      const double sigma = std::sqrt(beta * (1 - ab_prev) / (1 - ab));
      x = x + randn(x.shape(), options, &gen) * sigma;
    }
    if (on_step) on_step(n - i, n);
  }
  return x;  // the last step (t' < 0) is x0 itself, clipped
}

}  // namespace dlf::models
