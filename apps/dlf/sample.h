// `dlf generate` and `dlf eval`: use a trained checkpoint.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace dlf::app {

struct GenerateOptions {
  std::string checkpoint;  ///< a checkpoint directory, or
  std::string weights;     ///< a weights file (read_weights)
  std::string model;       ///< when given, the weights' must be this (needed if they do not say)
  std::string out;         ///< UNet: the PNG to write
  int64_t samples = 16;
  int64_t sampling_steps = 250;
  std::vector<std::string> prompts = {"\n"};  ///< GPT: one batch row each
  std::string tokenizer;  ///< GPT: a name or path (dlf::tokenizers); empty: bytes or ids
  int64_t max_tokens = 200;
  double temperature = 0.8;
  int64_t top_k = 40;
  double top_p = 1;
  std::vector<std::string> stops;  ///< GPT: a row ends at its first
  bool no_cache = false;           ///< GPT: recompute the prefix for every token
  uint64_t seed = 0;
};
/// GPT: prints each prompt and its continuation on stdout, the first as its tokens come. BERT:
/// prints the prompt with each [MASK] filled, and each mask's likeliest bytes. UNet: writes a grid
/// of DDPM samples to `out`. ViT: a dlf::Error (a classifier generates nothing).
void run_generate(const GenerateOptions& options);

struct EvalOptions {
  std::string checkpoint;
  std::vector<std::string> data;  ///< empty: the run's own data (text families only)
  int64_t batches = 0;            ///< 0: the whole test set for ViT, else 16
};
/// Prints the validation loss and the family's metric (GPT: perplexity and bits per byte;
/// BERT: masked-byte accuracy; ViT: test accuracy; UNet: the noise-prediction loss, as training
/// evaluates it); returns the loss.
double run_eval(const EvalOptions& options);

}  // namespace dlf::app
