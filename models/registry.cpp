#include <dlf/models/registry.h>

#include <algorithm>

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

int64_t gpt_parameter_count(const GPTConfig& c) {
  const int64_t C = c.dim;
  const int64_t block = 12 * C * C + 13 * C;  // ln_1, c_attn, c_proj, ln_2, c_fc, mlp.c_proj
  return c.vocab * C + c.context * C + c.layers * block + 2 * C;
}

int64_t default_batch(const std::string& model) {
  // Megatron-LM's batches (Narayanan et al. 2021, table 1): 1536 sequences for GPT-3 175B,
  // 3072 for the 1T GPT.
  if (model == "gpt3-175b") return 1536;
  if (model == "gpt-1t") return 3072;
  if (model.empty()) return 8;
  switch (model_family(model)) {
    case ModelFamily::gpt:
      return 8;
    case ModelFamily::bert:
      return 16;
    case ModelFamily::vit:
      return 64;
    case ModelFamily::unet:
      return 32;
  }
  return 8;
}

std::vector<std::string> model_names() {
  std::vector<std::string> names;
  for (const auto& c : gpt_configs()) names.push_back(c.name);
  for (const auto& c : bert_configs()) names.push_back(c.name);
  for (const auto& c : vit_configs()) names.push_back(c.name);
  for (const auto& c : unet_configs()) names.push_back(c.name);
  return names;
}

ModelFamily model_family(const std::string& name) {
  auto named = [&](const auto& configs) {
    return std::any_of(configs.begin(), configs.end(),
                       [&](const auto& c) { return c.name == name; });
  };
  if (named(gpt_configs())) return ModelFamily::gpt;
  if (named(bert_configs())) return ModelFamily::bert;
  if (named(vit_configs())) return ModelFamily::vit;
  if (named(unet_configs())) return ModelFamily::unet;
  std::string known;
  for (const auto& n : model_names()) known += (known.empty() ? "" : ", ") + n;
  throw Error("unknown model '" + name + "'; known models: " + known);
}

GPTConfig gpt_config(const std::string& name) {
  const auto& configs = gpt_configs();
  auto it = std::find_if(configs.begin(), configs.end(),
                         [&](const GPTConfig& c) { return c.name == name; });
  if (it != configs.end()) return *it;
  model_family(name);  // throws for a name no family has
  throw Error("'" + name + "' is not a GPT model");
}

}  // namespace dlf::models
