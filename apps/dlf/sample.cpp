#include "sample.h"

#include <cmath>
#include <cstdio>
#include <numbers>

#include <dlf/nn/checkpoint.h>

#include "model_io.h"

namespace dlf::app {
namespace {

struct Trained {
  RunConfig run;
  std::unique_ptr<models::GPT> model;
};

Trained load_trained(const std::string& dir) {
  const nn::Checkpoint ckpt = nn::load_checkpoint(dir);
  Trained t{run_config_from_json(ckpt.config), nullptr};
  t.model = build_model(t.run);
  nn::restore_module(*t.model, ckpt);
  return t;
}

}  // namespace

void run_generate(const GenerateOptions& o) {
  Trained t = load_trained(o.checkpoint);
  DLF_CHECK(!o.prompt.empty(), "--prompt must not be empty");
  Generator gen(o.seed);
  const Tensor prompt = nn::data::TextDataset::encode(o.prompt).unsqueeze(0);
  const Tensor out = t.model->generate(prompt, o.tokens, o.temperature, o.top_k, &gen);
  const std::string text = nn::data::TextDataset::decode(out.select(0, 0));
  std::fwrite(text.data(), 1, text.size(), stdout);
  std::fputc('\n', stdout);
}

double run_eval(const EvalOptions& o) {
  Trained t = load_trained(o.checkpoint);
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
