// Model weights in files: dlf checkpoints and safetensors (one file or Hugging Face's shards), in
// dlf's names or Hugging Face's (GPT-2's, LlamaForCausalLM's: models::Family::hf). What `dlf
// convert`, `dlf train --init-from` and `dlf generate --weights` read and write.
#pragma once
#include <cstdint>
#include <optional>
#include <string>

#include <dlf/nn/module.h>

#include <dlf/train/run_config.h>

namespace dlf::train {

/// The names weights are written under: dlf's (a GPT's are nanoGPT's), or Hugging Face's layout
/// of the family (models::HfLayout).
enum class WeightNames { dlf, hf };

/// What a weights file holds.
struct Weights {
  nn::NamedTensors tensors;           ///< in dlf's names
  std::optional<RunConfig> run = {};  ///< the run that made them, when the file says
};

/// Reads PATH: a dlf checkpoint (its directory, or its checkpoint.h5), a .safetensors file,
/// sharded safetensors (model.safetensors.index.json or its directory), or a directory holding
/// model.safetensors. Weights in a family's Hugging Face layout (models::family_of_hf_state) are
/// renamed to dlf's. Safetensors written by dlf carry the run config in their metadata
/// ("dlf.config").
Weights read_weights(const std::string& path);

/// The run that `weights` belong to: the file's own, which `model` (when not empty) must name,
/// or else `model`'s defaults; a dlf::Error when neither says.
RunConfig run_for_weights(const Weights& weights, const std::string& path,
                          const std::string& model);

/// What PATH holds, for a message that refuses to replace it: "a gpt-nano checkpoint at step
/// 300", "bert-tiny weights", or "a file" when it does not read as weights.
std::string describe_weights(const std::string& path);

/// A dlf::Error unless PATH is free to write: it holds no checkpoint or file yet, or
/// `overwrite` says to replace it. `choices` ends the message ("give --overwrite to replace it").
void check_not_replacing(const std::string& path, bool overwrite, const std::string& choices);

/// Writes a model's whole state to PATH with the run's config: a .safetensors file (tied tensors
/// once, in `names`), a dlf checkpoint directory (or its checkpoint.h5, always dlf's names), or,
/// with `max_shard_bytes` > 0, directory PATH of safetensors shards of at most that many bytes
/// of tensors each and their index (save_sharded_safetensors).
void write_weights(const std::string& path, const nn::NamedTensors& state, const RunConfig& run,
                   WeightNames names, uint64_t max_shard_bytes = 0);

}  // namespace dlf::train
