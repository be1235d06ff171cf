// Fine-tuning as a libtorch user writes it: build the model without initialising it, load
// pretrained weights, fine-tune on a new text with AdamW, a warmup-cosine schedule and
// gradient clipping, and save. The weights are a `dlf train --checkpoint DIR` directory or a
// plain HDF5 file of tensors under nanoGPT's names (h5py's, say). With `bf16`, the forward
// runs under autocast (mixed precision: bf16 matmuls and attention, f32 master weights).
//
//   example_finetune_gpt MODEL WEIGHTS TEXT OUT_DIR [steps] [fp32|bf16]
//   e.g. dlf train --model gpt-nano --steps 200 --checkpoint pre
//        example_finetune_gpt gpt-nano pre README.md tuned 100
#include <dlf/dlf.h>

#include <cstdio>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>

using namespace dlf;
using nn::data::Split;

namespace {

constexpr int64_t kBatch = 8, kSeq = 64;
constexpr uint64_t kSeed = 0;

double validation_loss(const models::GPT& model, const nn::data::TextDataset& text) {
  autograd::NoGradGuard no_grad;
  double total = 0;
  for (int64_t i = 0; i < 4; ++i) {
    const nn::data::TextBatch batch = text.window(Split::val, i, kBatch, kSeq);
    total += model.loss(batch.x, batch.y).item<double>();
  }
  return total / 4;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 5) {
    std::fprintf(stderr, "usage: %s MODEL WEIGHTS TEXT OUT_DIR [steps] [fp32|bf16]\n", argv[0]);
    return 2;
  }
  try {
    const std::string weights = argv[2], out = argv[4];
    const int64_t steps = argc > 5 ? std::stoll(argv[5]) : 100;
    const std::string precision = argc > 6 ? argv[6] : "fp32";
    DLF_CHECK(precision == "fp32" || precision == "bf16", "precision is fp32 or bf16, not '",
              precision, "'");
    const std::optional<DType> autocast =
        precision == "bf16" ? std::optional(DType::bf16) : std::nullopt;

    // Shapes only: no memory and no random initialisation for weights about to be replaced.
    std::shared_ptr<models::GPT> model;
    {
      DefaultDeviceGuard meta(kMeta);
      model = std::make_shared<models::GPT>(models::gpt_config(argv[1]));
    }
    model->to_empty(kCPU);
    model->load_state_dict(std::filesystem::is_directory(weights)
                               ? nn::load_checkpoint(weights).model
                               : nn::read_hdf5_tensors(weights));

    const nn::data::TextDataset text({argv[3]});
    const double before = validation_loss(*model, text);

    nn::optim::AdamW optimizer(model->parameters(), {.lr = 3e-4});
    nn::optim::WarmupCosineLR schedule(optimizer, steps / 10, steps);
    model->train();
    for (int64_t step = 0; step < steps; ++step) {
      const nn::data::TextBatch batch = text.sample(Split::train, step, kBatch, kSeq, kSeed);
      Tensor loss;
      {
        AutocastGuard mixed_precision(autocast);  // the forward; backward follows its dtypes
        loss = model->forward(batch.x, batch.y).loss;
      }
      optimizer.zero_grad();
      loss.backward();
      nn::optim::clip_grad_norm(model->parameters(), 1.0);
      optimizer.step();
      schedule.step();
      if (step % 20 == 0)
        std::printf("step %3lld  loss %.4f\n", (long long)step, loss.item<double>());
    }
    model->eval();
    const double after = validation_loss(*model, text);
    nn::save_checkpoint(
        out,
        {.model = model->state_dict(), .optimizer = optimizer.state_dict(*model), .step = steps});

    // What was saved is what was trained.
    models::GPT reloaded(models::gpt_config(argv[1]));
    reloaded.load_state_dict(nn::load_checkpoint(out).model);
    const double reloaded_loss = validation_loss(reloaded, text);
    std::printf(
        "validation loss on %s: %.4f before, %.4f after %lld steps; saved to %s "
        "(reloaded: %.4f)\n",
        argv[3], before, after, (long long)steps, out.c_str(), reloaded_loss);
    return after < before && reloaded_loss == after ? 0 : 1;
  } catch (const Error& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 1;
  }
}
