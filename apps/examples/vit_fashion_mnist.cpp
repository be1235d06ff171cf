// Trains a Vision Transformer on Fashion-MNIST (Debian's dataset-fashion-mnist) with AdamW,
// warmup then cosine, and reports its accuracy on the 10,000 test images.
//
//   example_vit_fashion_mnist                      vit-tiny, 300 steps of 64 images (quick)
//   example_vit_fashion_mnist epoch                one epoch (937 steps of 64)
//   example_vit_fashion_mnist STEPS [MODEL] [LR]   e.g. 2000 vit-small 5e-4
#include <dlf/autograd/grad_mode.h>
#include <dlf/device/threads.h>
#include <dlf/models/vit.h>
#include <dlf/nn/data/idx.h>
#include <dlf/nn/metrics.h>
#include <dlf/nn/optim/optimizer.h>
#include <dlf/nn/optim/schedule.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>

using namespace dlf;

namespace {

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// Accuracy over the whole set, in batches, without autograd.
double evaluate(const models::VisionTransformer& model, const nn::data::ImageDataset& data) {
  autograd::NoGradGuard no_grad;
  const int64_t n = data.images.size(0), batch = 500;
  double right = 0;
  for (int64_t start = 0; start < n; start += batch) {
    const int64_t end = std::min(n, start + batch);
    right += double(end - start) * nn::accuracy(model.forward(data.images.slice(0, start, end)),
                                                data.labels.slice(0, start, end));
  }
  return right / double(n);
}

}  // namespace

int main(int argc, char** argv) try {
  const int64_t batch = 64;
  const nn::data::ImageDataset train = nn::data::normalized(nn::data::load_fashion_mnist(true));
  const nn::data::ImageDataset test = nn::data::normalized(nn::data::load_fashion_mnist(false));
  const std::string arg = argc > 1 ? argv[1] : "300";
  const int64_t steps = arg == "epoch" ? train.images.size(0) / batch : std::stoll(arg);
  const std::string name = argc > 2 ? argv[2] : "vit-tiny";
  const double lr = argc > 3 ? std::stod(argv[3]) : 1e-3;

  Generator gen(0);
  models::VisionTransformer model(models::vit_config(name), &gen);
  nn::optim::AdamW opt(nn::optim::decay_groups(model.named_parameters(), 0.05), {.lr = lr});
  nn::optim::WarmupCosineLR schedule(opt, steps / 10, steps);
  std::printf("%s: %lld parameters, %lld steps of %lld images, AdamW lr %g, %d threads\n",
              name.c_str(), static_cast<long long>(model.num_parameters()),
              static_cast<long long>(steps), static_cast<long long>(batch), lr, num_threads());

  const auto start = std::chrono::steady_clock::now();
  double recent = 0;  // mean loss since the last report
  for (int64_t step = 0; step < steps; ++step) {
    const nn::data::ImageDataset b = nn::data::shuffled_batch(train, step, batch, 1234);
    opt.zero_grad();
    Tensor loss = model.loss(b.images, b.labels);
    loss.backward();
    opt.step();
    schedule.step();
    recent += loss.item<double>();
    if ((step + 1) % 50 == 0 || step + 1 == steps) {
      const int64_t since = step % 50 + 1;
      std::printf("step %5lld  loss %.4f  %.0f img/s\n", static_cast<long long>(step + 1),
                  recent / double(since), double((step + 1) * batch) / seconds_since(start));
      std::fflush(stdout);
      recent = 0;
    }
  }
  const double train_seconds = seconds_since(start);
  std::printf("trained %lld images in %.1f s; test accuracy %.2f%%\n",
              static_cast<long long>(steps * batch), train_seconds, 100 * evaluate(model, test));
  return 0;
} catch (const std::exception& e) {  // dlf::Error, or a bad number in argv
  std::fprintf(stderr, "error: %s\n", e.what());
  return 1;
}
