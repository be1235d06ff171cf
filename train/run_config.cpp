#include <dlf/train/run_config.h>

#include <cereal/archives/json.hpp>
#include <cereal/cereal.hpp>
#include <cereal/types/string.hpp>
#include <cereal/types/vector.hpp>
#include <sstream>

#include <dlf/error.h>

namespace dlf::train {

template <class Archive>
void serialize(Archive& ar, RunConfig& c) {
  ar(cereal::make_nvp("model", c.model), cereal::make_nvp("data", c.data),
     cereal::make_nvp("steps", c.steps), cereal::make_nvp("batch", c.batch),
     cereal::make_nvp("seq", c.seq), cereal::make_nvp("lr", c.lr),
     cereal::make_nvp("min_lr", c.min_lr), cereal::make_nvp("warmup", c.warmup),
     cereal::make_nvp("weight_decay", c.weight_decay), cereal::make_nvp("grad_clip", c.grad_clip),
     cereal::make_nvp("seed", c.seed), cereal::make_nvp("val_fraction", c.val_fraction));
  // A checkpoint of a dlf before tokenizers says nothing of one: its run read bytes.
  try {
    ar(cereal::make_nvp("tokenizer", c.tokenizer),
       cereal::make_nvp("tokenizer_hash", c.tokenizer_hash), cereal::make_nvp("vocab", c.vocab));
  } catch (const cereal::Exception&) {
    c.tokenizer.clear();
    c.tokenizer_hash.clear();
    c.vocab = 0;
  }
}

std::string to_json(const RunConfig& config) {
  std::ostringstream os;
  {
    cereal::JSONOutputArchive archive(os);
    archive(cereal::make_nvp("run", config));
  }
  return os.str();
}

RunConfig run_config_from_json(const std::string& json) {
  RunConfig config;
  try {
    std::istringstream is(json);
    cereal::JSONInputArchive archive(is);
    archive(cereal::make_nvp("run", config));
  } catch (const std::exception& e) {
    throw Error(std::string("the checkpoint's run config is not readable: ") + e.what());
  }
  return config;
}

}  // namespace dlf::train
