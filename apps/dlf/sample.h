// `dlf generate` and `dlf eval`: use a trained checkpoint.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace dlf::app {

struct GenerateOptions {
  std::string checkpoint;
  std::string model;  ///< when given, the checkpoint's must be this
  std::string out;    ///< UNet: the PNG to write
  int64_t samples = 16;
  int64_t sampling_steps = 250;
  std::string prompt = "\n";
  int64_t tokens = 200;
  double temperature = 0.8;
  int64_t top_k = 40;
  uint64_t seed = 0;
};
/// GPT: prints the prompt and its continuation on stdout. UNet: writes a grid of DDPM samples
/// to `out`.
void run_generate(const GenerateOptions& options);

struct EvalOptions {
  std::string checkpoint;
  std::vector<std::string> data;  ///< empty: the run's own data
  int64_t batches = 16;
};
/// Prints the validation loss, perplexity and bits per byte; returns the loss.
double run_eval(const EvalOptions& options);

}  // namespace dlf::app
