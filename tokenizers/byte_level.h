// GPT-2's byte-level alphabet: each of the 256 bytes as one printable character (bytes_to_unicode
// in its encoder.py), the spelling of tokens in encoder.json, vocab.bpe and tokenizer.json
// (a space is "Ġ", a newline "Ċ").
#pragma once
#include <optional>
#include <string>
#include <string_view>

namespace dlf::tokenizers::detail {

// `bytes` spelled in the alphabet (UTF-8).
std::string to_byte_level(std::string_view bytes);
// The bytes a spelling stands for, or nothing when a character is not of the alphabet.
std::optional<std::string> from_byte_level(std::string_view text);

}  // namespace dlf::tokenizers::detail
