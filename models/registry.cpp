#include <dlf/models/registry.h>

#include <algorithm>

namespace dlf::models {
namespace {

// GPT-2 small and medium are OpenAI's sizes (Radford et al. 2019, as in nanoGPT);
// nano and mini are byte-level models that train in seconds and minutes here.
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
  };
  return configs;
}

}  // namespace

std::vector<std::string> model_names() {
  std::vector<std::string> names;
  for (const auto& c : gpt_configs()) names.push_back(c.name);
  return names;
}

GPTConfig gpt_config(const std::string& name) {
  const auto& configs = gpt_configs();
  auto it = std::find_if(configs.begin(), configs.end(),
                         [&](const GPTConfig& c) { return c.name == name; });
  if (it != configs.end()) return *it;
  std::string known;
  for (const auto& n : model_names()) known += (known.empty() ? "" : ", ") + n;
  throw Error("unknown model '" + name + "'; known models: " + known);
}

}  // namespace dlf::models
