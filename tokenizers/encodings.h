// tiktoken's encodings by name: the regex and the special tokens each one's rank file goes with
// (tiktoken_ext/openai_public.py), and where the reference cache keeps its files.
#pragma once
#include <string>
#include <string_view>
#include <vector>

#include <dlf/tokenizers/tokenizer.h>

namespace dlf::tokenizers::detail {

struct Encoding {
  std::string_view name;
  std::string_view pattern;
  std::vector<SpecialToken> specials;
};

// GPT-2's pre-tokenisation regex (also r50k_base's and p50k_base's, and Hugging Face's
// ByteLevel pre-tokenizer's).
extern const std::string_view kGpt2Pattern;

// The encodings dlf knows by name: gpt2, r50k_base, p50k_base, cl100k_base, o200k_base.
const std::vector<Encoding>& encodings();
// The one named `name`, or nullptr.
const Encoding* find_encoding(std::string_view name);
// Their names, for messages: "gpt2, r50k_base, ...".
std::string encoding_names();

}  // namespace dlf::tokenizers::detail
