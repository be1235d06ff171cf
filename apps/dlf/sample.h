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
  std::string prompt = "\n";
  int64_t tokens = 200;
  double temperature = 0.8;
  int64_t top_k = 40;
  uint64_t seed = 0;
};
/// GPT: prints the prompt and its continuation on stdout. BERT: prints the prompt with each
/// [MASK] filled, and each mask's likeliest bytes. UNet: writes a grid of DDPM samples to `out`.
/// ViT: a dlf::Error (a classifier generates nothing).
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
