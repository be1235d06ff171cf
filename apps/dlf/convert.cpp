#include "convert.h"

#include <cstdio>

#include <dlf/models/family.h>
#include <dlf/train/run.h>

#include <dlf/train/weights_file.h>

namespace dlf::app {

void run_convert(const ConvertOptions& o) {
  train::check_not_replacing(o.out, o.overwrite, "give --overwrite to replace it");
  const train::Weights weights = train::read_weights(o.in);
  const train::RunConfig run = train::run_for_weights(weights, o.in, o.model);
  const nn::NamedTensors state = train::state_from_weights(run, weights.tensors);
  const bool hf = o.names == "hf";
  train::write_weights(o.out, state, run, hf ? train::WeightNames::hf : train::WeightNames::dlf,
                       o.max_shard_bytes);
  const std::string names =
      hf ? "Hugging Face " + models::family_of(run.model).hf.model_class : "dlf";
  std::printf("%s: %s's %zu tensors written to %s%s (%s names)\n", o.in.c_str(), run.model.c_str(),
              state.size(), o.out.c_str(), o.max_shard_bytes > 0 ? " in shards" : "",
              names.c_str());
}

}  // namespace dlf::app
