#include "encodings.h"

namespace dlf::tokenizers::detail {

const std::string_view kGpt2Pattern =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";

const std::vector<Encoding>& encodings() {
  static const std::vector<Encoding> all = {
      {"gpt2", kGpt2Pattern, {{"<|endoftext|>", 50256}}},
      {"r50k_base", kGpt2Pattern, {{"<|endoftext|>", 50256}}},
      {"p50k_base", kGpt2Pattern, {{"<|endoftext|>", 50256}}},
      {"cl100k_base",
       R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)",
       {{"<|endoftext|>", 100257},
        {"<|fim_prefix|>", 100258},
        {"<|fim_middle|>", 100259},
        {"<|fim_suffix|>", 100260},
        {"<|endofprompt|>", 100276}}},
      {"o200k_base",
       R"([^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+)",
       {{"<|endoftext|>", 199999}, {"<|endofprompt|>", 200018}}},
  };
  return all;
}

const Encoding* find_encoding(std::string_view name) {
  for (const Encoding& e : encodings())
    if (e.name == name) return &e;
  return nullptr;
}

std::string encoding_names() {
  std::string out;
  for (const Encoding& e : encodings()) out += (out.empty() ? "" : ", ") + std::string(e.name);
  return out;
}

}  // namespace dlf::tokenizers::detail
