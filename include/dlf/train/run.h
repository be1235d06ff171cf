// What a run starts from, by its config and its family's record: the family's recipe where the
// run says nothing, its data, its whole model's initial state and size.
#pragma once
#include <cstdint>
#include <set>
#include <string>

#include <dlf/models/family.h>
#include <dlf/train/run_config.h>

namespace dlf::train {

/// The run's family recipe where the command line (`given`, "--warmup") says nothing: GPT,
/// BERT, UNet nanoGPT's (the RunConfig defaults: decay 0.1, warmup 5 % of the steps, cosine to
/// lr / 10); ViT the small-ViT recipe (models::Family::recipe). A default min_lr above lr
/// becomes lr / 10; a dlf::Error when a given one is above lr.
void apply_recipe(RunConfig& run, const std::set<std::string>& given);
/// Loads the run's tokenizer (RunConfig::tokenizer, when given) and records its hash and its
/// vocabulary, the model's, in the run; a dlf::Error for a model that predicts no tokens.
void record_tokenizer(RunConfig& run);
/// The run's data, as its family loads it. Token shards must be of the run's tokenizer (bytes
/// without one) and a tokenizer needs shards: a dlf::Error says which tokenizer made what.
models::TrainData load_data(const RunConfig& run);
/// The steps between evaluations the family's recipe gives (an epoch of the training set for a
/// classifier, else 0: at the end only).
int64_t default_eval_every(const RunConfig& run, const models::TrainData& data);

/// The run's whole model initialised from its seed: its state dict.
nn::NamedTensors initial_state(const RunConfig& run);
/// The run's whole model holding `weights` (a state from a file): its state dict. Every tensor
/// must be given with the model's shape (a tied one under either name) and no other name; a
/// dlf::Error names the first that is not.
nn::NamedTensors state_from_weights(const RunConfig& run, const nn::NamedTensors& weights);
/// Parameters of `model` with a vocabulary of `vocab` (0: its own), tied ones once, counted on a
/// meta device.
int64_t parameter_count(const std::string& model, int64_t vocab = 0);

}  // namespace dlf::train
