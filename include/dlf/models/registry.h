// Named model configs: what `dlf train --model NAME` accepts.
#pragma once
#include <string>
#include <vector>

#include <dlf/models/bert.h>
#include <dlf/models/gpt.h>
#include <dlf/models/unet.h>
#include <dlf/models/vit.h>

namespace dlf::models {

/// The zoo's families.
enum class ModelFamily { gpt, bert, vit, unet };

/// Every registered name, in a stable order: the GPTs, BERTs, ViTs, then the UNets.
std::vector<std::string> model_names();
/// The family of a registered model; a dlf::Error lists the known names otherwise.
ModelFamily model_family(const std::string& name);
/// The config registered as `name`; a dlf::Error lists the known names otherwise.
GPTConfig gpt_config(const std::string& name);
/// Parameters of a GPT of this config without building it (the head is tied to wte).
int64_t gpt_parameter_count(const GPTConfig& config);
/// The global batch (sequences or images a step) that `dlf train` and `dlf plan` take for
/// `model` when none is given, whatever the layout: the zoo's sizes that train here 8 (GPT),
/// 16 (BERT), 64 (ViT) or 32 (UNet); the planning-only GPTs their published one. An empty name
/// (a GPT given by its dimensions) takes GPT's.
int64_t default_batch(const std::string& model);

}  // namespace dlf::models
