// Trains a small DDPM UNet on Fashion-MNIST (padded to 32x32, scaled to [-1, 1]) for a short
// while, or loads one from a checkpoint, and writes a grid of samples to a PNG.
//
//   example_unet_sampler [--model unet-tiny] [--steps 200] [--batch 32] [--lr 2e-3]
//                        [--sampling-steps 50] [--checkpoint DIR] [--out samples.png]
//
// With --checkpoint DIR (a dlf checkpoint of that model) it skips training and samples from it.
#include <dlf/dlf.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>

using namespace dlf;

namespace {

struct Options {
  std::string model = "unet-tiny", checkpoint, out = "samples.png";
  int64_t steps = 200, batch = 32, sampling_steps = 50, images = 36;
  double lr = 2e-3;
};

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; i += 2) {
    const std::string flag = argv[i];
    if (i + 1 == argc) throw Error("option " + flag + " needs a value");
    const std::string value = argv[i + 1];
    if (flag == "--model")
      o.model = value;
    else if (flag == "--steps")
      o.steps = std::stoll(value);
    else if (flag == "--batch")
      o.batch = std::stoll(value);
    else if (flag == "--lr")
      o.lr = std::stod(value);
    else if (flag == "--sampling-steps")
      o.sampling_steps = std::stoll(value);
    else if (flag == "--checkpoint")
      o.checkpoint = value;
    else if (flag == "--out")
      o.out = value;
    else
      throw Error("unknown option " + flag + " (see the top of unet_sampler.cpp)");
  }
  return o;
}

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

void fit(models::UNet& unet, const models::DDPM& ddpm, const Options& o) {
  const nn::data::ImageDataset data = nn::data::load_fashion_mnist(true);
  const int64_t n = data.images.size(0), per_epoch = n / o.batch;
  nn::optim::AdamW opt(nn::optim::decay_groups(unet.named_parameters(), 0.0), {.lr = o.lr});
  nn::optim::WarmupCosineLR schedule(opt, 20, o.steps);
  Generator gen(1);
  const auto start = std::chrono::steady_clock::now();
  double window = 0;
  std::vector<int64_t> order;
  for (int64_t step = 0; step < o.steps; ++step) {
    if (step % per_epoch == 0) order = nn::data::shuffled_indices(n, 0, step / per_epoch);
    const auto first = order.begin() + (step % per_epoch) * o.batch;
    const Tensor images = nn::data::batch_of(data, {first, first + o.batch}).images;
    const Tensor x0 = nn::data::pad_images(images, unet.config().image) * 2 - 1;
    opt.zero_grad();
    const Tensor loss = ddpm.loss(unet, x0, gen);
    loss.backward();
    opt.step();
    schedule.step();
    window += loss.item<double>();
    if ((step + 1) % 25 == 0 || step + 1 == o.steps) {
      const int64_t count = (step % 25) + 1;
      std::printf("step %4lld  loss %.4f  %.1f img/s\n", (long long)step + 1, window / count,
                  double((step + 1) * o.batch) / seconds_since(start));
      window = 0;
    }
  }
}

}  // namespace

int main(int argc, char** argv) try {
  const Options o = parse(argc, argv);
  manual_seed(0);
  Generator init(0);
  models::UNet unet(models::unet_config(o.model), &init);
  const models::DDPM ddpm;
  std::printf("%s: %lld parameters\n", o.model.c_str(), (long long)unet.num_parameters());
  if (!o.checkpoint.empty()) {
    nn::restore_module(unet, nn::load_checkpoint(o.checkpoint));
    std::printf("loaded %s\n", o.checkpoint.c_str());
  } else {
    fit(unet, ddpm, o);
  }
  const auto start = std::chrono::steady_clock::now();
  Generator gen(2);
  const Tensor samples = ddpm.sample(unet, o.images, gen, o.sampling_steps);
  nn::data::write_png_grid(o.out, samples, 6,
                           nn::data::readable_png_scale(samples.size(2), samples.size(3)));
  std::printf("sampled %lld images in %lld steps (%.1f s) -> %s\n", (long long)o.images,
              (long long)o.sampling_steps, seconds_since(start), o.out.c_str());
  return 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "example_unet_sampler: %s\n", e.what());
  return 1;
}
