// Named model configs: what `dlf train --model NAME` accepts.
#pragma once
#include <string>
#include <vector>

#include <dlf/models/gpt.h>

namespace dlf::models {

/// Every registered name, in a stable order.
std::vector<std::string> model_names();
/// The config registered as `name`; a dlf::Error lists the known names otherwise.
GPTConfig gpt_config(const std::string& name);

}  // namespace dlf::models
