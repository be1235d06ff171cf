// One JSON object on one line, fields in the order added: benchmark results and metrics files.
#pragma once
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <string>

namespace dlf {

/// One JSON object, printed as one line.
class JsonLine {
 public:
  /// Adds "key": value (a string, escaped).
  JsonLine& add(const std::string& key, const std::string& value) { return raw(key, quote(value)); }
  /// Adds "key": value (a string, escaped).
  JsonLine& add(const std::string& key, const char* value) { return add(key, std::string(value)); }
  /// Adds an integer field.
  JsonLine& add(const std::string& key, int64_t value) { return raw(key, std::to_string(value)); }
  /// Adds an integer field.
  JsonLine& add(const std::string& key, int value) { return raw(key, std::to_string(value)); }
  /// Adds a boolean field.
  JsonLine& add(const std::string& key, bool value) { return raw(key, value ? "true" : "false"); }
  /// Every bit of the double (17 significant digits), for values compared exactly.
  JsonLine& add_exact(const std::string& key, double value) {
    if (!std::isfinite(value)) return raw(key, "null");
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.17g", value);
    return raw(key, buf);
  }
  /// Adds a number (6 significant digits; non-finite as null).
  JsonLine& add(const std::string& key, double value) {
    if (!std::isfinite(value)) return raw(key, "null");  // JSON has no NaN or infinity
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.6g", value);
    return raw(key, buf);
  }

  /// The object's text.
  std::string str() const { return "{" + body_ + "}"; }
  /// Prints the line to stdout.
  void print() const {
    std::printf("%s\n", str().c_str());
    std::fflush(stdout);
  }

 private:
  JsonLine& raw(const std::string& key, const std::string& json_value) {
    if (!body_.empty()) body_ += ",";
    body_ += quote(key) + ":" + json_value;
    return *this;
  }
  static std::string quote(const std::string& s) {
    std::string out = "\"";
    for (char c : s) {
      if (c == '"' || c == '\\') {
        out += '\\';
        out += c;
      } else if (static_cast<unsigned char>(c) < 0x20) {
        char buf[8];
        std::snprintf(buf, sizeof buf, "\\u%04x", c);
        out += buf;
      } else {
        out += c;
      }
    }
    return out + "\"";
  }
  std::string body_;
};

}  // namespace dlf
