#include "convert.h"

#include <cstdio>

#include <dlf/train/run.h>

#include "weights_file.h"

namespace dlf::app {

void run_convert(const ConvertOptions& o) {
  check_not_replacing(o.out, o.overwrite, "give --overwrite to replace it");
  const Weights weights = read_weights(o.in);
  const RunConfig run = run_for_weights(weights, o.in, o.model);
  const nn::NamedTensors state = train::state_from_weights(run, weights.tensors);
  write_weights(o.out, state, run, o.names == "hf" ? WeightNames::hf : WeightNames::nanogpt);
  std::printf("%s: %s's %zu tensors written to %s (%s names)\n", o.in.c_str(), run.model.c_str(),
              state.size(), o.out.c_str(), o.names == "hf" ? "Hugging Face GPT-2" : "dlf");
}

}  // namespace dlf::app
