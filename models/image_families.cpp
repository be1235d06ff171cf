// The families that train on Fashion-MNIST (Debian's dataset-fashion-mnist): ViT classifies the
// images (the score: test accuracy over the whole test set), UNet learns DDPM's noise
// prediction on them padded to 32 x 32 in [-1, 1].
#include <dlf/autograd/grad_mode.h>
#include <dlf/core/factory.h>
#include <dlf/core/ops/elementwise.h>
#include <dlf/core/ops/nn_ops.h>
#include <dlf/models/ddpm.h>
#include <dlf/models/family.h>
#include <dlf/models/unet.h>
#include <dlf/models/vit.h>
#include <dlf/nn/data/transforms.h>
#include <dlf/nn/metrics.h>

#include <algorithm>

#include "families.h"
#include "named_config.h"

namespace dlf::models {
namespace {

using nn::data::ImageDataset;

// DDPM's schedule, made once: a captured step reads its tables, and cannot make them.
const DDPM& schedule() {
  static const DDPM ddpm;
  return ddpm;
}

// Training batches shuffled as a function of the seed and the step, this replica's rows of them.
class ImageTask : public Task {
 protected:
  explicit ImageTask(const TaskSetup& s)
      : train_(*s.data.train),
        test_(*s.data.test),
        batch_(s.batch),
        seed_(s.seed),
        replicas_(s.replicas),
        replica_(s.replica) {}

  ImageDataset shuffled(int64_t step) const {
    return mine(nn::data::shuffled_batch(train_, step, batch_, seed_));
  }
  ImageDataset mine(const ImageDataset& all) const {
    const int64_t n = all.images.size(0) / replicas_, first = n * replica_;
    return {all.images.narrow(0, first, n).contiguous(), all.labels.narrow(0, first, n)};
  }
  std::string batch_description() const override {
    const Tensor& x = train_.images;
    return std::to_string(batch_) + " images " + std::to_string(x.size(2)) + " x " +
           std::to_string(x.size(3));
  }
  double items_per_step() const override { return double(batch_); }

  const ImageDataset &train_, &test_;
  int64_t batch_;
  uint64_t seed_;
  int replicas_, replica_;
};

class ViTTask final : public ImageTask {
 public:
  explicit ViTTask(const TaskSetup& s)
      : ImageTask(s), eval_batches_(s.eval_batches), progress_(s.eval_progress) {}

  std::vector<Tensor> batch(int64_t step) const override {
    const ImageDataset b = shuffled(step);
    return {b.images, b.labels};
  }

  // The whole test set (or its first eval_batches x batch images), cut between the replicas,
  // in chunks of a replica's training rows (at most 250 images): a forward without gradients
  // over as many rows as the step's takes fewer activations than the step keeps (one of
  // vit-tiny's MLP activations over 250 images is 38 MB, where its step of 8 images on two
  // devices peaks at 45 MB in all). The same chunks on every device: the same sums.
  Evaluation evaluate(const EvalModel& model) const override {
    const auto& vit = static_cast<const VisionTransformer&>(*model.module);
    const int64_t chunk = std::min<int64_t>(250, batch_ / replicas_);
    autograd::NoGradGuard no_grad;
    const int64_t whole = test_.images.size(0);
    const int64_t n = eval_batches_ > 0 ? std::min(whole, eval_batches_ * batch_) : whole;
    const int64_t begin = n * replica_ / replicas_, end = n * (replica_ + 1) / replicas_;
    double loss = 0, correct = 0;
    const bool shown = progress_ && end - begin > chunk;
    for (int64_t i = begin; i < end; i += chunk) {
      if (shown) progress_(i - begin, end - begin);
      const int64_t k = std::min(chunk, end - i);
      const Tensor labels = test_.labels.narrow(0, i, k).to(model.device);
      const Tensor logits = vit.forward(test_.images.narrow(0, i, k).contiguous().to(model.device));
      loss += cross_entropy(logits, labels).item<double>() * double(k);
      correct += nn::accuracy(logits, labels) * double(k);
    }
    if (shown) progress_(end - begin, end - begin);
    const double scale = double(replicas_) / double(n);
    return {.loss = model.average(loss) * scale,
            .metric = "accuracy",
            .value = model.average(correct) * scale};
  }

 private:
  int64_t eval_batches_;
  std::function<void(int64_t, int64_t)> progress_;
};

class UNetTask final : public ImageTask {
 public:
  explicit UNetTask(const TaskSetup& s) : ImageTask(s), eval_batches_(s.eval_batches) {}

  std::vector<Tensor> batch(int64_t step) const override {
    return noised(shuffled(step).images, kTrainStream, step);
  }

  // The first eval_batches x batch test images, with the same noise every time.
  Evaluation evaluate(const EvalModel& model) const override {
    autograd::NoGradGuard no_grad;
    double total = 0;
    for (int64_t i = 0; i < eval_batches_; ++i) {
      const int64_t first = (i * batch_) % (test_.images.size(0) - batch_ + 1);
      const ImageDataset all{test_.images.narrow(0, first, batch_), test_.labels};
      std::vector<Tensor> b = noised(mine(all).images, kTestStream, i);
      for (Tensor& t : b) t = t.to(model.device);
      total += unet_loss(*model.module, b).item<double>();
    }
    return {.loss = model.average(total / double(eval_batches_))};
  }

  // DDPM's noise-prediction loss of a UNet on {x0, noise, timesteps}.
  static Tensor unet_loss(const nn::Module& model, const std::vector<Tensor>& b) {
    return schedule().loss(static_cast<const UNet&>(model), b[0], b[1], b[2]);
  }

 private:
  static constexpr uint64_t kTrainStream = 0x6e6f697365, kTestStream = 0x74657374;

  // DDPM's inputs for this replica's images x0: {x0, noise, timesteps}. The timesteps and noise
  // are drawn for the whole batch (from the batch's own counter stream) and cut as the images
  // are, so any number of replicas trains on what one device would.
  std::vector<Tensor> noised(const Tensor& x0, uint64_t stream, int64_t index) const {
    Generator gen(seed_ ^ stream);
    gen.set_offset(uint64_t(index) << 32);
    const Tensor t = randint(0, schedule().steps(), {batch_}, {.dtype = DType::i64}, &gen);
    Shape shape = x0.shape();
    shape[0] = batch_;
    const Tensor noise = randn(shape, {.dtype = x0.dtype()}, &gen);
    const int64_t n = batch_ / replicas_, first = n * replica_;
    return {x0, noise.narrow(0, first, n).contiguous(), t.narrow(0, first, n).contiguous()};
  }

  int64_t eval_batches_;
};

// Fashion-MNIST as a family takes it: `prepare`d, from `paths` (a folder of its IDX files) or
// Debian's.
template <typename Prepare>
TrainData fashion_mnist(const std::vector<std::string>& paths, Prepare prepare) {
  auto load = [&](bool train) {
    return prepare(paths.empty() ? nn::data::load_fashion_mnist(train)
                                 : nn::data::load_fashion_mnist(train, paths[0]));
  };
  return {.train = load(true), .test = load(false)};
}

}  // namespace

const Family& vit_family() {
  static const Family family{
      .name = "vit",
      .models = detail::names_of(vit_configs()),
      .unit = "img",
      // the small-ViT recipe — decay 0.05, 100 warm-up steps, cosine to 0, PyTorch's and
      // timm's beta2 — with which vit-tiny learns Fashion-MNIST in one epoch as the peer does;
      // test accuracy each epoch
      .recipe = {.weight_decay = 0.05,
                 .warmup = 100,
                 .min_lr_share = 0,
                 .beta2 = 0.999,
                 .eval_every = -1},
      .eval_batches = 0,
      .build =
          [](const std::string& name, const BuildOptions& o) {
            DLF_CHECK(o.vocab == 0, name, " classifies images: it has no vocabulary");
            ViTConfig c = vit_config(name);
            c.linears = o.linears;
            return std::unique_ptr<nn::Module>(std::make_unique<VisionTransformer>(c));
          },
      .tp_split = vit_tensor_parallel_split,
      .load_data =
          [](const std::vector<std::string>& paths, double) {
            return fashion_mnist(paths,
                                 [](const ImageDataset& raw) { return nn::data::normalized(raw); });
          },
      .loss =
          [](const nn::Module& model, const std::vector<Tensor>& b) {
            return static_cast<const VisionTransformer&>(model).loss(b[0], b[1]);
          },
      .task =
          [](const TaskSetup& s) { return std::unique_ptr<Task>(std::make_unique<ViTTask>(s)); },
      .example_batch =
          [](const std::string& name, int64_t batch, int64_t, Generator& gen) {
            const ViTConfig c = vit_config(name);
            const int64_t B = batch ? batch : 64, side = c.image / c.patch;
            const Tensor x = randn({B, c.channels, c.image, c.image}, {}, &gen);
            const Tensor y = randint(0, c.classes, {B}, {.dtype = DType::i64}, &gen);
            return ExampleBatch{{x, y}, side * side + 1};
          },
      .default_batch = [](const std::string&) -> int64_t { return 64; },
      .sequence = [](const std::string&, int64_t) -> int64_t { return 0; },
  };
  return family;
}

const Family& unet_family() {
  static const Family family{
      .name = "unet",
      .models = detail::names_of(unet_configs()),
      .unit = "img",
      .generates = Generates::images,
      .build =
          [](const std::string& name, const BuildOptions& o) {
            DLF_CHECK(!o.linears && o.vocab == 0, name,
                      " trains data-parallel only, on images: its layers are whole, and it has "
                      "no vocabulary");
            return std::unique_ptr<nn::Module>(std::make_unique<UNet>(unet_config(name)));
          },
      .load_data =
          [](const std::vector<std::string>& paths, double) {
            return fashion_mnist(paths, [](const ImageDataset& raw) {
              return ImageDataset{nn::data::pad_images(raw.images, 32) * 2.0 - 1.0, raw.labels};
            });
          },
      .loss = UNetTask::unet_loss,
      .task =
          [](const TaskSetup& s) { return std::unique_ptr<Task>(std::make_unique<UNetTask>(s)); },
      .example_batch =
          [](const std::string& name, int64_t batch, int64_t, Generator& gen) {
            const UNetConfig c = unet_config(name);
            const int64_t B = batch ? batch : 32, S = c.image;
            const Tensor x0 = rand({B, c.channels, S, S}, {}, &gen) * 2.0 - 1.0;
            const Tensor noise = randn({B, c.channels, S, S}, {}, &gen);
            const Tensor t = randint(0, schedule().steps(), {B}, {.dtype = DType::i64}, &gen);
            return ExampleBatch{{x0, noise, t}, S * S};
          },
      .default_batch = [](const std::string&) -> int64_t { return 32; },
      .sequence = [](const std::string&, int64_t) -> int64_t { return 0; },
  };
  return family;
}

}  // namespace dlf::models
