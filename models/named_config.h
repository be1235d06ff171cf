// Looking a family's configs up by name.
#pragma once
#include <algorithm>
#include <string>
#include <vector>

#include <dlf/error.h>

namespace dlf::models::detail {

/// The config of `configs` named `name`; a dlf::Error lists the known names of the `family`
/// ("BERT") otherwise.
template <typename Config>
Config config_named(const std::vector<Config>& configs, const std::string& name,
                    const std::string& family) {
  auto it =
      std::find_if(configs.begin(), configs.end(), [&](const Config& c) { return c.name == name; });
  if (it != configs.end()) return *it;
  std::string known;
  for (const auto& c : configs) known += (known.empty() ? "" : ", ") + c.name;
  throw Error("unknown " + family + " model '" + name + "'; known: " + known);
}

/// The names of `configs`, in order.
template <typename Config>
std::vector<std::string> names_of(const std::vector<Config>& configs) {
  std::vector<std::string> names;
  for (const auto& c : configs) names.push_back(c.name);
  return names;
}

}  // namespace dlf::models::detail
