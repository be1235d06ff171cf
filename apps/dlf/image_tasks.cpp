#include "image_tasks.h"

#include <dlf/autograd/grad_mode.h>
#include <dlf/core/factory.h>
#include <dlf/core/ops/elementwise.h>
#include <dlf/core/ops/nn_ops.h>
#include <dlf/models/ddpm.h>
#include <dlf/models/unet.h>
#include <dlf/models/vit.h>
#include <dlf/nn/data/prefetch.h>
#include <dlf/nn/data/transforms.h>
#include <dlf/nn/metrics.h>

#include <algorithm>

#include "progress.h"
#include "replica_task.h"

namespace dlf::app {
namespace {

using nn::data::ImageDataset;

// Shared by both families: shuffled training batches (a function of the seed and the step, so
// a resumed run draws what the uninterrupted one would have), this replica's rows of them.
class ImageTask : public ReplicaTask {
 protected:
  ImageTask(const TaskSetup& s, std::unique_ptr<nn::Module> model, const ImageDataset& train,
            const ImageDataset& test, parallel::SplitRule tp_split = {})
      : ReplicaTask(s, std::move(model), std::move(tp_split)),
        train_(train),
        test_(test),
        batches_(
            [this](int64_t step) {
              return mine(nn::data::shuffled_batch(train_, step, run_.batch, run_.seed));
            },
            s.first_step) {}

  ImageDataset mine(const ImageDataset& all) const {
    const int64_t first = row0(all.images.size(0)), n = rows(all.images.size(0));
    return {all.images.narrow(0, first, n).contiguous(), all.labels.narrow(0, first, n)};
  }
  std::string batch_description() const override {
    const Tensor& x = train_.images;
    return std::to_string(run_.batch) + " images " + std::to_string(x.size(2)) + " x " +
           std::to_string(x.size(3));
  }
  double items_per_step() const override { return double(run_.batch); }
  const char* item_unit() const override { return "img"; }

  const ImageDataset &train_, &test_;
  nn::data::Prefetcher<ImageDataset> batches_;
};

class ViTTask final : public ImageTask {
 public:
  ViTTask(const TaskSetup& s, const ImageDataset& train, const ImageDataset& test)
      : ImageTask(s, std::make_unique<models::VisionTransformer>(config(s)), train, test,
                  models::vit_tensor_parallel_split),
        eval_batches_(s.eval_batches) {}

  double forward_backward() override {
    const ImageDataset b = batches_.next();
    return train_on({b.images.to(device()), b.labels.to(device())});
  }
  Tensor batch_loss(const std::vector<Tensor>& b) const override { return vit().loss(b[0], b[1]); }

  // The whole test set (or its first eval_batches x batch images), cut between the replicas,
  // in chunks of a replica's training rows (at most 250 images): a forward without gradients
  // over as many rows as the step's takes fewer activations than the step keeps (one of
  // vit-tiny's MLP activations over 250 images is 38 MB, where its step of 8 images on two
  // devices peaks at 45 MB in all). The same chunks on every device: the same sums.
  Evaluation evaluate_replica() override {
    const int64_t chunk = std::min<int64_t>(250, rows(run_.batch));
    autograd::NoGradGuard no_grad;
    const int64_t whole = test_.images.size(0), dp = mesh_.layout().dp;
    const int64_t n = eval_batches_ > 0 ? std::min(whole, eval_batches_ * run_.batch) : whole;
    const int64_t begin = n * mesh_.dp_rank() / dp, end = n * (mesh_.dp_rank() + 1) / dp;
    double loss = 0, correct = 0;
    const bool lead = mesh_.dp_rank() == 0 && mesh_.tp_rank() == 0 && mesh_.pp_rank() == 0;
    PhaseProgress progress(lead && end - begin > chunk, "test set", end - begin, "images");
    for (int64_t i = begin; i < end; i += chunk) {
      progress.update(i - begin);
      const int64_t k = std::min(chunk, end - i);
      const Tensor labels = test_.labels.narrow(0, i, k).to(device());
      const Tensor logits = vit().forward(test_.images.narrow(0, i, k).contiguous().to(device()));
      loss += cross_entropy(logits, labels).item<double>() * double(k);
      correct += nn::accuracy(logits, labels) * double(k);
    }
    const double scale = double(dp) / double(n);
    return {.loss = average(loss) * scale, .metric = "accuracy", .value = average(correct) * scale};
  }

 private:
  static models::ViTConfig config(const TaskSetup& s) {
    models::ViTConfig c = models::vit_config(s.run.model);
    c.linears = linears(s);
    return c;
  }
  const models::VisionTransformer& vit() const {
    return static_cast<const models::VisionTransformer&>(*model_);
  }

  int64_t eval_batches_;
};

class UNetTask final : public ImageTask {
 public:
  UNetTask(const TaskSetup& s, const ImageDataset& train, const ImageDataset& test)
      : ImageTask(s, std::make_unique<models::UNet>(models::unet_config(s.run.model)), train, test),
        eval_batches_(s.eval_batches),
        step_(s.first_step) {}

  double forward_backward() override {
    const ImageDataset b = batches_.next();
    return train_on(noised(b.images, kTrainStream, step_++));
  }
  Tensor batch_loss(const std::vector<Tensor>& b) const override {
    return ddpm_.loss(unet(), b[0], b[1], b[2]);
  }

  // The first eval_batches x batch test images, with the same noise every time.
  Evaluation evaluate_replica() override {
    autograd::NoGradGuard no_grad;
    double total = 0;
    for (int64_t i = 0; i < eval_batches_; ++i) {
      const int64_t first = (i * run_.batch) % (test_.images.size(0) - run_.batch + 1);
      const ImageDataset all{test_.images.narrow(0, first, run_.batch), test_.labels};
      total += batch_loss(noised(mine(all).images, kTestStream, i)).item<double>();
    }
    return {.loss = average(total / double(eval_batches_)), .metric = {}, .value = 0};
  }

 private:
  static constexpr uint64_t kTrainStream = 0x6e6f697365, kTestStream = 0x74657374;

  // DDPM's inputs for this replica's images x0, on its device: {x0, noise, timesteps}. The
  // timesteps and noise are drawn for the whole batch (from the batch's own counter stream) and
  // cut as the images are, so any number of replicas trains on what one device would.
  std::vector<Tensor> noised(const Tensor& x0, uint64_t stream, int64_t index) const {
    Generator gen(run_.seed ^ stream);
    gen.set_offset(uint64_t(index) << 32);
    const Tensor t = randint(0, ddpm_.steps(), {run_.batch}, {.dtype = DType::i64}, &gen);
    Shape shape = x0.shape();
    shape[0] = run_.batch;
    const Tensor noise = randn(shape, {.dtype = x0.dtype()}, &gen);
    const int64_t first = row0(run_.batch), n = rows(run_.batch);
    return {x0.to(device()), noise.narrow(0, first, n).contiguous().to(device()),
            t.narrow(0, first, n).contiguous().to(device())};
  }
  const models::UNet& unet() const { return static_cast<const models::UNet&>(*model_); }

  models::DDPM ddpm_;
  int64_t eval_batches_, step_;
};

}  // namespace

ImageDataset prepared_images(bool vit, bool train, const RunConfig& run) {
  const ImageDataset raw = run.data.empty() ? nn::data::load_fashion_mnist(train)
                                            : nn::data::load_fashion_mnist(train, run.data[0]);
  if (vit) return nn::data::normalized(raw);
  return {nn::data::pad_images(raw.images, 32) * 2.0 - 1.0, raw.labels};
}

std::unique_ptr<RankTask> make_vit_task(const TaskSetup& setup, const ImageDataset& train,
                                        const ImageDataset& test) {
  return std::make_unique<ViTTask>(setup, train, test);
}

std::unique_ptr<RankTask> make_unet_task(const TaskSetup& setup, const ImageDataset& train,
                                         const ImageDataset& test) {
  return std::make_unique<UNetTask>(setup, train, test);
}

}  // namespace dlf::app
