// Tokenizers small enough to work out by hand: the 256 bytes as ids 0-255 (id = byte), then the
// tokens a test adds.
#pragma once
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <dlf/tokenizers/tokenizer.h>

#include "tokenizers/model.h"

namespace dlf::tokenizers::test {

using detail::Definition;

/// The 256 bytes, then `extra` (ids 256, 257, ...), under `pattern`.
inline Definition byte_vocab(std::vector<std::string> extra = {},
                             std::string pattern = R"(\S+|\s+)") {
  Definition d;
  d.source = "a test's";
  d.pattern = std::move(pattern);
  for (int b = 0; b < 256; ++b) d.tokens.emplace_back(1, char(b));
  for (std::string& t : extra) d.tokens.push_back(std::move(t));
  return d;
}

inline Tokenizer make(Definition d) {
  return Tokenizer(std::make_shared<const detail::Model>(std::move(d)));
}

/// The ids of `text`.
inline std::vector<uint32_t> ids(const Definition& d, std::string_view text) {
  return make(d).encode(text);
}

}  // namespace dlf::tokenizers::test
