// Token ids as text, as `dlf tokenizer encode` writes them and `decode` reads them: decimal
// numbers separated by whitespace.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <dlf/tokenizers/tokenizer.h>

namespace dlf::tokenizers {

/// Appends `ids` to `out` as decimal numbers separated by single spaces ("15496 11 995").
void append_ids_text(const std::vector<uint32_t>& ids, std::string& out);

/// The bytes of the whitespace-separated ids in `text`, by `tokenizer`. A dlf::Error naming
/// `source` ("-": standard input), the first word that is not a whole number and its byte offset.
std::string decode_ids_text(const Tokenizer& tokenizer, std::string_view text,
                            const std::string& source);

}  // namespace dlf::tokenizers
