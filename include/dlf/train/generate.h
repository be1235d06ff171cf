// Using a trained checkpoint: what `dlf generate` makes of it (a GPT continues text, BERT fills
// masks, a UNet samples images) and what `dlf eval` measures of it (its family's validation loss
// and metric, as training evaluates).
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include <dlf/models/family.h>
#include <dlf/train/run_config.h>

namespace dlf::train {

/// What to generate from which weights.
struct GenerateOptions {
  std::string checkpoint = {};  ///< a checkpoint directory, or
  std::string weights = {};     ///< a weights file (read_weights)
  std::string model = {};  ///< when given, the weights' must be this (needed if they do not say)
  std::string out = {};    ///< UNet: the PNG to write
  int64_t samples = 16;    ///< UNet: images in the grid
  int64_t sampling_steps = 250;               ///< UNet: DDPM's denoising steps
  std::vector<std::string> prompts = {"\n"};  ///< GPT: one batch row each
  std::string tokenizer = {};  ///< GPT: a name or path (dlf::tokenizers); empty: bytes or ids
  int64_t max_tokens = 200;    ///< GPT: new tokens a row
  double temperature = 0.8;    ///< GPT: the sampling temperature
  int64_t top_k = 40;          ///< GPT: sample among the k likeliest; BERT: candidates shown
  double top_p = 1;            ///< GPT: nucleus sampling's mass
  std::vector<std::string> stops = {};  ///< GPT: a row ends at its first
  bool no_cache = false;                ///< GPT: recompute the prefix for every token
  uint64_t seed = 0;                    ///< of the sampling
};

/// Where generated text goes, as it comes.
using TextOut = std::function<void(std::string_view text)>;

/// GPT: writes each prompt and its continuation to `out`, the first as its tokens come. BERT:
/// the prompt with each [MASK] filled, and each mask's likeliest bytes. UNet: writes a grid of
/// DDPM samples to `options.out` and says so on `out`. ViT: a dlf::Error (a classifier
/// generates nothing).
void generate(const GenerateOptions& options, const TextOut& out);

/// What to evaluate.
struct EvalOptions {
  std::string checkpoint = {};         ///< a checkpoint directory
  std::vector<std::string> data = {};  ///< empty: the run's own data (text families only)
  int64_t batches = 0;                 ///< 0: the whole test set for ViT, else 16
};

/// A checkpoint's evaluation.
struct CheckpointEvaluation {
  RunConfig run;             ///< the checkpoint's run (its data as evaluated)
  models::Evaluation value;  ///< the validation loss and the family's metric
  int64_t batches = 0;       ///< batches evaluated; 0: the whole test set
};

/// The validation loss and the family's metric (GPT: none; BERT: masked-byte accuracy; ViT:
/// test accuracy; UNet: the noise-prediction loss, as training evaluates it) of the
/// checkpoint's whole model on one device, exactly as training evaluates.
CheckpointEvaluation evaluate_checkpoint(const EvalOptions& options);

}  // namespace dlf::train
