#include <dlf/models/family.h>

#include <algorithm>

#include "families.h"

namespace dlf::models {

const std::vector<Family>& families() {
  static const std::vector<Family> all = {gpt_family(), llama_family(), bert_family(), vit_family(),
                                          unet_family()};
  return all;
}

const Family& family(const std::string& name) {
  std::string known;
  for (const Family& f : families()) {
    if (f.name == name) return f;
    known += (known.empty() ? "" : ", ") + f.name;
  }
  throw Error("unknown model family '" + name + "'; known: " + known);
}

const Family& family_of(const std::string& name) {
  std::string known;
  for (const Family& f : families()) {
    if (std::find(f.models.begin(), f.models.end(), name) != f.models.end()) return f;
    for (const std::string& m : f.models) known += (known.empty() ? "" : ", ") + m;
  }
  throw Error("unknown model '" + name + "'; known models: " + known);
}

const Family* family_of_hf_state(const nn::NamedTensors& state) {
  for (const Family& f : families())
    if (f.hf.recognises && f.hf.recognises(state)) return &f;
  return nullptr;
}

}  // namespace dlf::models
