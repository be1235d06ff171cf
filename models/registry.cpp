#include <dlf/models/registry.h>

#include "families.h"
#include "named_config.h"

namespace dlf::models {
namespace {

// GPT-2 small and medium are OpenAI's sizes (Radford et al. 2019, as in nanoGPT);
// nano and mini are byte-level models that train in seconds and minutes here. The last two are
// for planning on meta devices (dlf plan): GPT-3 175B (Brown et al. 2020, table 2.1) and the
// 1T-parameter GPT of Megatron-LM (Narayanan et al. 2021, table 1: 128 layers, hidden 25600,
// 160 heads).
const std::vector<GPTConfig>& gpt_configs() {
  static const std::vector<GPTConfig> configs = {
      {.name = "gpt-nano", .vocab = 256, .context = 64, .layers = 2, .heads = 4, .dim = 64},
      {.name = "gpt-mini", .vocab = 256, .context = 256, .layers = 6, .heads = 6, .dim = 384},
      {.name = "gpt-small", .vocab = 50257, .context = 1024, .layers = 12, .heads = 12, .dim = 768},
      {.name = "gpt-medium",
       .vocab = 50257,
       .context = 1024,
       .layers = 24,
       .heads = 16,
       .dim = 1024},
      {.name = "gpt3-175b",
       .vocab = 50257,
       .context = 2048,
       .layers = 96,
       .heads = 96,
       .dim = 12288},
      {.name = "gpt-1t",
       .vocab = 50257,
       .context = 2048,
       .layers = 128,
       .heads = 160,
       .dim = 25600},
  };
  return configs;
}

}  // namespace

std::vector<std::string> gpt_names() { return detail::names_of(gpt_configs()); }

std::vector<std::string> model_names() {
  std::vector<std::string> names;
  for (const Family& f : families()) names.insert(names.end(), f.models.begin(), f.models.end());
  return names;
}

GPTConfig gpt_config(const std::string& name) {
  DLF_CHECK(family_of(name).gpt, "'", name, "' is not a GPT model");
  return detail::config_named(gpt_configs(), name, "GPT");
}

}  // namespace dlf::models
