#include "validators.h"

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <string>

#include <dlf/models/registry.h>

namespace dlf::app {
namespace {

// The number `text` is, if all of it is one (finite, in double's range).
bool parse_number(const std::string& text, double& value) {
  if (text.empty()) return false;
  char* end = nullptr;
  errno = 0;
  value = std::strtod(text.c_str(), &end);
  return *end == '\0' && errno == 0 && std::isfinite(value);
}

}  // namespace

CLI::Validator positive() {
  return {[](std::string& text) -> std::string {
            double v = 0;
            if (parse_number(text, v) && v > 0) return "";
            return "must be a finite number greater than 0, got '" + text + "'";
          },
          "POSITIVE"};
}

CLI::Validator non_negative() {
  return {[](std::string& text) -> std::string {
            double v = 0;
            if (parse_number(text, v) && v >= 0) return "";
            return "must be a finite number, 0 or more, got '" + text + "'";
          },
          "NON-NEGATIVE"};
}

CLI::Validator byte_size() {
  return {[](std::string& text) -> std::string {
            static constexpr std::pair<const char*, double> kUnits[] = {
                {"KiB", 1024.0}, {"MiB", 1048576.0}, {"GiB", 1073741824.0},
                {"KB", 1e3},     {"MB", 1e6},        {"GB", 1e9},
                {"B", 1}};
            double scale = 1;
            std::string number = text;
            for (const auto& [unit, bytes] : kUnits) {
              if (!text.ends_with(unit)) continue;
              number = text.substr(0, text.size() - std::string(unit).size());
              scale = bytes;
              break;
            }
            double v = 0;
            if (!parse_number(number, v) || v * scale < 1 || v * scale > 1e18)
              return "must be a size such as 2GB, 500MB or 5GiB, got '" + text + "'";
            text = std::to_string(uint64_t(v * scale));
            return "";
          },
          "SIZE"};
}

CLI::Validator whole(int64_t lo, int64_t hi) {
  const std::string range = std::to_string(lo) + " to " + std::to_string(hi);
  return {[lo, hi, range](std::string& text) -> std::string {
            char* end = nullptr;
            errno = 0;
            const long long v = std::strtoll(text.c_str(), &end, 10);
            if (!text.empty() && *end == '\0' && errno == 0 && v >= lo && v <= hi) return "";
            return "must be a whole number from " + range + ", got '" + text + "'";
          },
          range};
}

CLI::Validator non_empty() {
  return {[](std::string& text) -> std::string { return text.empty() ? "must not be empty" : ""; },
          "TEXT"};
}

CLI::Validator model_name() {
  return {[](std::string& value) -> std::string {
            for (const auto& name : models::model_names())
              if (name == value) return "";
            std::string known;
            for (const auto& name : models::model_names()) known += " " + name;
            return "unknown model '" + value + "' (known:" + known + ")";
          },
          "MODEL"};
}

}  // namespace dlf::app
