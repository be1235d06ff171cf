// A strict JSON reader and a string quoter, for headers of files from elsewhere (safetensors).
// Written here rather than taken from a library: it reads untrusted bytes, so every path of it
// is ours to fuzz (rapidjson 1.1, Debian's, does pointer arithmetic on null on every parse).
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace dlf::json {

struct Member;

/// A parsed JSON value. Numbers keep their text; objects keep their members in order,
/// repeated names included (the caller decides what a repeat means).
struct Value {
  enum class Kind { null, boolean, number, string, array, object };
  Kind kind = Kind::null;
  std::string text;             ///< a string's value, a number's literal
  bool boolean = false;         ///< a boolean's value
  std::vector<Value> items;     ///< an array's elements
  std::vector<Member> members;  ///< an object's members, in order

  /// The first member named `key` of an object, or null.
  const Value* find(std::string_view key) const;
  /// A number written as a whole number in 0..2^64-1 ("12", not "1.2e1" or "-0"), or none.
  std::optional<uint64_t> as_uint64() const;
};

/// One member of an object.
struct Member {
  std::string name;
  Value value;
};

/// Parses `text` (RFC 8259: UTF-8, one value, whitespace around it, at most 128 levels deep).
/// A dlf::Error says what is wrong and at which byte.
Value parse(std::string_view text);

/// `s` as a JSON string literal, quotes included; a dlf::Error if `s` is not UTF-8.
std::string quote(std::string_view s);

}  // namespace dlf::json
