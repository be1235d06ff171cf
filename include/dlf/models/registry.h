// Named model configs: what `dlf train --model NAME` accepts (models::family_of gives a name's
// family record).
#pragma once
#include <string>
#include <vector>

#include <dlf/models/bert.h>
#include <dlf/models/family.h>
#include <dlf/models/gpt.h>
#include <dlf/models/unet.h>
#include <dlf/models/vit.h>

namespace dlf::models {

/// Every registered name, in a stable order: the GPTs, BERTs, ViTs, then the UNets.
std::vector<std::string> model_names();
/// The config registered as `name`; a dlf::Error lists the known names otherwise.
GPTConfig gpt_config(const std::string& name);

}  // namespace dlf::models
