// What train, generate and eval share: the model and data of a run config.
#pragma once
#include <memory>

#include <dlf/models/gpt.h>
#include <dlf/nn/data/text_dataset.h>

#include "run_config.h"

namespace dlf::app {

/// The model named by the config, initialised from its seed.
std::unique_ptr<models::GPT> build_model(const RunConfig& run);
/// The config's sequence length: its own, or the model's context.
int64_t sequence_length(const RunConfig& run, const models::GPTConfig& model);
nn::data::TextDataset open_dataset(const RunConfig& run);

}  // namespace dlf::app
