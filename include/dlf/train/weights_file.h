// Model weights in files: dlf checkpoints and safetensors, in dlf's names or (GPT) Hugging Face
// GPT-2's. What `dlf convert`, `dlf train --init-from` and `dlf generate --weights` read and write.
#pragma once
#include <optional>
#include <string>

#include <dlf/nn/module.h>

#include <dlf/train/run_config.h>

namespace dlf::train {

/// The names a GPT's weights are written under.
enum class WeightNames { nanogpt, hf };

/// What a weights file holds.
struct Weights {
  nn::NamedTensors tensors;           ///< in dlf's names
  std::optional<RunConfig> run = {};  ///< the run that made them, when the file says
};

/// Reads PATH: a dlf checkpoint (its directory, or its checkpoint.h5) or a .safetensors file.
/// GPT weights in GPT-2's layout (models::is_hf_gpt) are renamed to dlf's. A safetensors file
/// written by dlf carries its run config in the metadata ("dlf.config").
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

/// Writes a model's whole state to PATH — a .safetensors file (tied tensors once, `names`
/// choosing GPT's) or a dlf checkpoint directory (or its checkpoint.h5, always dlf's names) —
/// with the run's config.
void write_weights(const std::string& path, const nn::NamedTensors& state, const RunConfig& run,
                   WeightNames names);

}  // namespace dlf::train
