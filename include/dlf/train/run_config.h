// What a training run is: stored in its checkpoint (JSON) so that a resumed run, `dlf generate`
// and `dlf eval` rebuild the same model and data.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace dlf::train {

/// A run's model, data and optimizer schedule.
struct RunConfig {
  std::string model = "gpt-mini";  ///< a registered name (models::family_of)
  std::vector<std::string> data;   ///< files or folders; empty: the family's default data
  int64_t steps = 1000;            ///< optimizer steps in all (the schedule's length)
  int64_t batch = 8;               ///< the global batch: sequences or images a step
  int64_t seq = 0;                 ///< tokens a sequence; 0: the family's default
  double lr = 1e-3;                ///< AdamW's peak learning rate
  double min_lr = 1e-4;            ///< where the cosine ends
  int64_t warmup = 0;              ///< warmup steps; 0: 5 % of the steps
  double weight_decay = 0.1;       ///< of matrices and embeddings
  double grad_clip = 1.0;          ///< the global gradient norm clipped to this
  uint64_t seed = 1337;            ///< of the initialisation and the batches
  double val_fraction = 0.1;       ///< of the text held out for validation
  /// The tokenizer of the run's token ids, as given (a name or a path); empty: bytes.
  std::string tokenizer = {};
  /// Its hash (tokenizers::Tokenizer::hash_hex), which token shards and `dlf generate` must
  /// match; empty: bytes.
  std::string tokenizer_hash = {};
  /// The model's vocabulary, its tokenizer's (models::BuildOptions::vocab); 0: the model's own.
  int64_t vocab = 0;
};

/// The config as JSON.
std::string to_json(const RunConfig& config);
/// The config of JSON text; a dlf::Error when the text is not a run config.
RunConfig run_config_from_json(const std::string& json);

}  // namespace dlf::train
