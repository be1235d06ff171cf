// tiktoken's rank files: `.tiktoken` (a base64 token and its rank a line) and the npm packages'
// JSON (tiktoken's encoders/*.json, js-tiktoken's ranks: the regex, the special tokens, and the
// ranks as lines of "! FIRST_RANK TOKEN TOKEN ...", each token the next rank).
#include <charconv>

#include <dlf/error.h>

#include "encodings.h"
#include "files.h"

namespace dlf::tokenizers::detail {
namespace {

// The bytes of standard base64 (padding optional), or nothing.
std::optional<std::string> from_base64(std::string_view text) {
  const auto value = [](char c) -> int {
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= 'a' && c <= 'z') return c - 'a' + 26;
    if (c >= '0' && c <= '9') return c - '0' + 52;
    if (c == '+') return 62;
    if (c == '/') return 63;
    return -1;
  };
  while (!text.empty() && text.back() == '=') text.remove_suffix(1);
  if (text.size() % 4 == 1) return std::nullopt;
  std::string out;
  uint32_t bits = 0;
  int count = 0;
  for (const char c : text) {
    const int v = value(c);
    if (v < 0) return std::nullopt;
    bits = bits << 6 | uint32_t(v);
    count += 6;
    if (count >= 8) {
      count -= 8;
      out += char(bits >> count & 0xff);
    }
  }
  return out;
}

// Sets token `rank` of d to the bytes `base64` spells.
void set_rank(Definition& d, std::string_view base64, uint64_t rank, const std::string& where) {
  const std::optional<std::string> bytes = from_base64(base64);
  DLF_CHECK(bytes && !bytes->empty(), where, ": \"", base64, "\" is not a token in base64");
  DLF_CHECK(rank < (uint64_t(1) << 31), where, ": rank ", rank, " is past 2^31");
  if (d.tokens.size() <= rank) d.tokens.resize(rank + 1);
  DLF_CHECK(d.tokens[rank].empty(), where, ": rank ", rank, " is given twice");
  d.tokens[rank] = *bytes;
}

std::optional<uint64_t> parse_uint(std::string_view s) {
  uint64_t v = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size()) return std::nullopt;
  return v;
}

}  // namespace

Definition read_tiktoken_file(const fs::path& path) {
  const std::string name = path.stem().string();
  const Encoding* encoding = find_encoding(name);
  DLF_CHECK(encoding != nullptr && name != "gpt2", "tiktoken rank file ", path.string(),
            ": its name says which encoding it is (its regex and special tokens), and ", name,
            " is none of r50k_base, p50k_base, cl100k_base, o200k_base; rename it, or use the "
            "npm JSON, which carries its regex");
  Definition d;
  d.source = path.string();
  d.pattern = encoding->pattern;
  d.specials = encoding->specials;
  for_each_line(read_file(path), [&](std::string_view line, size_t number) {
    const std::string where = path.string() + " line " + std::to_string(number);
    const size_t space = line.find(' ');
    const std::optional<uint64_t> rank =
        space == std::string_view::npos ? std::nullopt : parse_uint(line.substr(space + 1));
    DLF_CHECK(rank.has_value(), where, ": expected a base64 token, a space and its rank");
    set_rank(d, line.substr(0, space), *rank, where);
  });
  return d;
}

namespace {

Definition read_tiktoken_json(const json::Value& root, const fs::path& path) {
  using Kind = json::Value::Kind;
  Definition d;
  d.source = path.string();
  const json::Value* pattern = root.find("pat_str");
  const json::Value* ranks = root.find("bpe_ranks");
  const json::Value* specials = root.find("special_tokens");
  DLF_CHECK(pattern && pattern->kind == Kind::string && ranks && ranks->kind == Kind::string,
            d.source, ": tiktoken's JSON needs the strings pat_str and bpe_ranks");
  d.pattern = pattern->text;
  if (specials != nullptr) {
    DLF_CHECK(specials->kind == Kind::object, d.source, ": special_tokens is not an object");
    for (const json::Member& m : specials->members) {
      const std::optional<uint64_t> id = m.value.as_uint64();
      DLF_CHECK(id && *id < (uint64_t(1) << 31), d.source, ": special token ", m.name,
                " has no whole-number id");
      d.specials.push_back({m.name, uint32_t(*id)});
    }
  }
  for_each_line(ranks->text, [&](std::string_view line, size_t number) {
    const std::string where = d.source + " bpe_ranks line " + std::to_string(number);
    // "! FIRST token token ...": the first field is not used.
    const size_t first = line.find(' ');
    const size_t second = first == std::string_view::npos ? first : line.find(' ', first + 1);
    const std::optional<uint64_t> start =
        second == std::string_view::npos ? std::nullopt
                                         : parse_uint(line.substr(first + 1, second - first - 1));
    DLF_CHECK(start.has_value(), where, ": expected a marker, the first rank and tokens");
    uint64_t rank = *start;
    for (size_t pos = second + 1; pos <= line.size();) {
      size_t end = line.find(' ', pos);
      if (end == std::string_view::npos) end = line.size();
      if (end > pos) set_rank(d, line.substr(pos, end - pos), rank++, where);
      pos = end + 1;
    }
  });
  return d;
}

}  // namespace

Definition read_json_file(const fs::path& path) {
  const json::Value root = read_json(path);
  DLF_CHECK(root.kind == json::Value::Kind::object, "tokenizer file ", path.string(),
            " is not a JSON object");
  if (root.find("bpe_ranks") != nullptr) return read_tiktoken_json(root, path);
  DLF_CHECK(root.find("model") != nullptr, "tokenizer file ", path.string(),
            " is neither a Hugging Face tokenizer.json (no \"model\") nor tiktoken's JSON (no "
            "\"bpe_ranks\")");
  return read_tokenizer_json(root, path);
}

}  // namespace dlf::tokenizers::detail
