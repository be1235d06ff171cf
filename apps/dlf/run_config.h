// What a `dlf train` run is: stored in its checkpoint (JSON, cereal) so that `--resume`,
// `dlf generate` and `dlf eval` rebuild the same model and data.
#pragma once
#include <cereal/cereal.hpp>
#include <cstdint>
#include <string>
#include <vector>

namespace dlf::app {

struct RunConfig {
  std::string model = "gpt-mini";
  std::vector<std::string> data;  ///< empty: the default corpus
  int64_t steps = 1000;
  int64_t batch = 8;
  int64_t seq = 0;  ///< 0: the model's context
  double lr = 1e-3;
  double min_lr = 1e-4;
  int64_t warmup = 0;  ///< 0: 5 % of the steps
  double weight_decay = 0.1;
  double grad_clip = 1.0;
  uint64_t seed = 1337;
  double val_fraction = 0.1;

  template <class Archive>
  void serialize(Archive& ar) {
    ar(CEREAL_NVP(model), CEREAL_NVP(data), CEREAL_NVP(steps), CEREAL_NVP(batch), CEREAL_NVP(seq),
       CEREAL_NVP(lr), CEREAL_NVP(min_lr), CEREAL_NVP(warmup), CEREAL_NVP(weight_decay),
       CEREAL_NVP(grad_clip), CEREAL_NVP(seed), CEREAL_NVP(val_fraction));
  }
};

std::string to_json(const RunConfig& config);
/// A dlf::Error when the text is not a run config.
RunConfig run_config_from_json(const std::string& json);

}  // namespace dlf::app
