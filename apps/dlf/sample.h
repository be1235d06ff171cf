// `dlf generate` and `dlf eval`: use a trained checkpoint (train/generate.h does the work).
#pragma once
#include <dlf/train/generate.h>

namespace dlf::app {

using train::EvalOptions;
using train::GenerateOptions;

/// train::generate, its text on stdout as it comes.
void run_generate(const GenerateOptions& options);

/// Prints the validation loss and the family's metric (GPT: perplexity and bits per byte;
/// BERT: masked-byte accuracy; ViT: test accuracy; UNet: the noise-prediction loss, as training
/// evaluates it); returns the loss.
double run_eval(const EvalOptions& options);

}  // namespace dlf::app
