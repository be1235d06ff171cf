#include "model_io.h"

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

}  // namespace dlf::app
