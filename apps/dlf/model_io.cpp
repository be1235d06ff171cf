#include "model_io.h"

#include <dlf/autograd/grad_mode.h>
#include <dlf/models/registry.h>

namespace dlf::app {

std::unique_ptr<models::GPT> build_model(const RunConfig& run) {
  manual_seed(run.seed);
  return std::make_unique<models::GPT>(models::gpt_config(run.model));
}

int64_t sequence_length(const RunConfig& run, const models::GPTConfig& model) {
  const int64_t context = model.context;
  DLF_CHECK(run.seq <= context, "--seq ", run.seq, " is longer than ", run.model, "'s context of ",
            context, " tokens");
  return run.seq > 0 ? run.seq : context;
}

nn::data::TextDataset open_dataset(const RunConfig& run) {
  return nn::data::TextDataset(run.data.empty() ? nn::data::default_corpus_paths() : run.data,
                               run.val_fraction);
}

double validation_loss(models::GPT& model, const nn::data::TextDataset& data, int64_t batches,
                       int64_t batch, int64_t seq) {
  autograd::NoGradGuard no_grad;
  const bool was_training = model.is_training();
  model.eval();
  double total = 0;
  for (int64_t i = 0; i < batches; ++i) {
    const nn::data::TextBatch b = data.window(nn::data::Split::val, i, batch, seq);
    const Device device = model.transformer->wte->weight.device();
    total += model.loss(b.x.to(device), b.y.to(device)).item<double>();
  }
  model.train(was_training);
  return total / double(batches);
}

}  // namespace dlf::app
