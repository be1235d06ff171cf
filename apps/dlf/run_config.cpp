#include "run_config.h"

#include <cereal/archives/json.hpp>
#include <cereal/types/string.hpp>
#include <cereal/types/vector.hpp>
#include <sstream>

#include <dlf/error.h>

namespace dlf::app {

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

}  // namespace dlf::app
