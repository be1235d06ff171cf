#include "convert.h"

#include <cstdio>

#include <dlf/train/run.h>

#include <dlf/train/weights_file.h>

namespace dlf::app {

void run_convert(const ConvertOptions& o) {
  train::check_not_replacing(o.out, o.overwrite, "give --overwrite to replace it");
  const train::Weights weights = train::read_weights(o.in);
  const train::RunConfig run = train::run_for_weights(weights, o.in, o.model);
  const nn::NamedTensors state = train::state_from_weights(run, weights.tensors);
  train::write_weights(o.out, state, run,
                       o.names == "hf" ? train::WeightNames::hf : train::WeightNames::nanogpt);
  std::printf("%s: %s's %zu tensors written to %s (%s names)\n", o.in.c_str(), run.model.c_str(),
              state.size(), o.out.c_str(), o.names == "hf" ? "Hugging Face GPT-2" : "dlf");
}

}  // namespace dlf::app
