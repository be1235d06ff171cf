#include "sample.h"

#include <cmath>
#include <cstdio>
#include <numbers>

#include <dlf/models/ddpm.h>
#include <dlf/models/registry.h>
#include <dlf/nn/checkpoint.h>
#include <dlf/nn/data/png.h>

#include "model_io.h"

namespace dlf::app {
namespace {

struct Trained {
  RunConfig run;
  std::unique_ptr<models::GPT> model;
};

Trained load_trained(const nn::Checkpoint& ckpt, const RunConfig& run) {
  DLF_CHECK(models::model_family(run.model) == models::ModelFamily::gpt, run.model,
            " is not a GPT: generate and eval take GPT checkpoints (and generate UNet ones)");
  Trained t{run, nullptr};
  t.model = build_model(t.run);
  nn::restore_module(*t.model, ckpt);
  return t;
}

}  // namespace

namespace {

void sample_images(const nn::Checkpoint& ckpt, const RunConfig& run, const GenerateOptions& o) {
  DLF_CHECK(!o.out.empty(), "--out FILE.png: where to write the samples of ", run.model);
  models::UNet unet(models::unet_config(run.model));
  nn::restore_module(unet, ckpt);
  Generator gen(o.seed);
  const Tensor images = models::DDPM().sample(unet, o.samples, gen, o.sampling_steps);
  const auto columns = static_cast<int64_t>(std::ceil(std::sqrt(double(o.samples))));
  nn::data::write_png_grid(o.out, images, columns);
  std::printf("%s: %ld samples (%ld denoising steps) written to %s\n", run.model.c_str(),
              static_cast<long>(o.samples), static_cast<long>(o.sampling_steps), o.out.c_str());
}

}  // namespace

void run_generate(const GenerateOptions& o) {
  const nn::Checkpoint ckpt = nn::load_checkpoint(o.checkpoint);
  const RunConfig run = run_config_from_json(ckpt.config);
  DLF_CHECK(o.model.empty() || o.model == run.model, "--model ", o.model, ": the checkpoint in ",
            o.checkpoint, " is a ", run.model);
  if (models::model_family(run.model) == models::ModelFamily::unet)
    return sample_images(ckpt, run, o);
  Trained t = load_trained(ckpt, run);
  DLF_CHECK(!o.prompt.empty(), "--prompt must not be empty");
  Generator gen(o.seed);
  const Tensor prompt = nn::data::TextDataset::encode(o.prompt).unsqueeze(0);
  const Tensor out = t.model->generate(prompt, o.tokens, o.temperature, o.top_k, &gen);
  const std::string text = nn::data::TextDataset::decode(out.select(0, 0));
  std::fwrite(text.data(), 1, text.size(), stdout);
  std::fputc('\n', stdout);
}

double run_eval(const EvalOptions& o) {
  const nn::Checkpoint ckpt = nn::load_checkpoint(o.checkpoint);
  Trained t = load_trained(ckpt, run_config_from_json(ckpt.config));
  if (!o.data.empty()) t.run.data = o.data;
  const nn::data::TextDataset data = open_dataset(t.run);
  const int64_t seq = sequence_length(t.run, t.model->config());
  const double loss = validation_loss(*t.model, data, o.batches, t.run.batch, seq);
  std::printf(
      "%s: validation loss %.4f, perplexity %.2f, %.3f bits per byte (%ld x %ld x %ld tokens)\n",
      t.run.model.c_str(), loss, std::exp(loss), loss / std::numbers::ln2,
      static_cast<long>(o.batches), static_cast<long>(t.run.batch), static_cast<long>(seq));
  return loss;
}

}  // namespace dlf::app
