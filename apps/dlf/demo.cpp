#include "demo.h"

#include <chrono>
#include <cmath>
#include <cstdio>
#include <iostream>

#include <dlf/dlf.h>

#include <dlf/core/op_profile.h>

namespace dlf::app {
namespace {

constexpr int kPoints = 256;

// y = sin(3x) + x/2 sampled on [-2, 2].
std::pair<Tensor, Tensor> toy_data() {
  std::vector<float> xs(kPoints), ys(kPoints);
  for (int i = 0; i < kPoints; ++i) {
    xs[i] = -2.0f + 4.0f * static_cast<float>(i) / (kPoints - 1);
    ys[i] = std::sin(3.0f * xs[i]) + 0.5f * xs[i];
  }
  return {from_vector(xs, {kPoints, 1}), from_vector(ys, {kPoints, 1})};
}

Tensor init(const Shape& shape, int64_t fan_in, Generator& gen) {
  Tensor t = mul(randn(shape, {}, &gen), 1.0 / std::sqrt(static_cast<double>(fan_in)));
  t.requires_grad_();
  return t;
}

}  // namespace

double run_demo(const DemoOptions& o) {
  auto [x, y] = toy_data();
  Generator gen(o.seed);
  const int64_t h = o.hidden;
  std::vector<Tensor> params = {init({h, 1}, 1, gen), zeros({h}).requires_grad_(),
                                init({h, h}, h, gen), zeros({h}).requires_grad_(),
                                init({1, h}, h, gen), zeros({1}).requires_grad_()};
  const double baseline = var(y, {}, 0).item<double>();
  std::printf(
      "dlf demo: fit y = sin(3x) + x/2 with a 1-%lld-%lld-1 tanh MLP, SGD lr %g, %d threads\n",
      static_cast<long long>(h), static_cast<long long>(h), o.lr, num_threads());
  std::printf("loss of predicting the mean: %.4f\n", baseline);

  OpProfile counter;
  double loss_value = 0;
  auto start = std::chrono::steady_clock::now();
  for (int step = 1; step <= o.steps; ++step) {
    Tensor a = tanh(linear(x, params[0], params[1]));
    Tensor b = tanh(linear(a, params[2], params[3]));
    Tensor loss = mean(pow(linear(b, params[4], params[5]) - y, 2.0));
    loss.backward();
    {
      autograd::NoGradGuard no_grad;
      for (Tensor& p : params) {
        p.copy_(p - o.lr * p.grad());
        p.set_grad(Tensor());
      }
    }
    loss_value = loss.item<double>();
    if (step == 1 || step % std::max(1, o.steps / 10) == 0) {
      std::printf("step %5d  loss %.5f\n", step, loss_value);
    }
  }
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf(
      "%d steps in %.2f s (%.2f ms/step); final loss %.5f = %.1f%% of the mean predictor's\n\n",
      o.steps, seconds, 1e3 * seconds / o.steps, loss_value, 100 * loss_value / baseline);
  std::printf("what the steps cost, by op (from each op's cost record at the dispatch point):\n");
  counter.print(std::cout);
  return loss_value;
}

}  // namespace dlf::app
