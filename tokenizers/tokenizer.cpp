#include <dlf/tokenizers/tokenizer.h>

#include <cstdio>

#include <dlf/device/atomic_file.h>

#include "files.h"
#include "model.h"

namespace dlf::tokenizers {

Tokenizer::Tokenizer(std::shared_ptr<const detail::Model> model) : model_(std::move(model)) {}

std::vector<uint32_t> Tokenizer::encode(std::string_view text, Specials specials) const {
  std::vector<uint32_t> ids;
  ids.reserve(text.size() / 4 + 16);
  Encoder(*this).encode(text, ids, specials);
  return ids;
}

std::vector<uint32_t> Tokenizer::encode_file(const std::filesystem::path& path,
                                             Specials specials) const {
  return encode(detail::read_file(path), specials);
}

std::string Tokenizer::decode(std::span<const uint32_t> ids) const {
  std::string out;
  decode_append(ids, out);
  return out;
}

void Tokenizer::decode_append(std::span<const uint32_t> ids, std::string& out) const {
  for (const uint32_t id : ids) out += model_->bytes_of(id);
}

std::string_view Tokenizer::token_bytes(uint32_t id) const { return model_->bytes_of(id); }

std::string Tokenizer::describe() const {
  std::string text = "source: " + source() + "\nvocab_size: " + std::to_string(vocab_size()) +
                     "\nhash: " + hash_hex() + "\npattern: " + pattern() + "\nspecial_tokens:";
  for (const SpecialToken& s : special_tokens()) text += " " + s.text + "=" + std::to_string(s.id);
  return text + "\n";
}

uint32_t Tokenizer::vocab_size() const { return model_->vocab_size(); }

const std::vector<SpecialToken>& Tokenizer::special_tokens() const {
  return model_->definition().specials;
}

std::optional<uint32_t> Tokenizer::special_id(std::string_view text) const {
  for (const SpecialToken& s : special_tokens())
    if (s.text == text) return s.id;
  return std::nullopt;
}

std::optional<uint32_t> Tokenizer::end_of_text() const {
  if (auto id = special_id("<|endoftext|>")) return id;
  return special_id("<|end_of_text|>");
}

const std::string& Tokenizer::pattern() const { return model_->definition().pattern; }

const std::string& Tokenizer::source() const { return model_->definition().source; }

uint64_t Tokenizer::hash() const { return model_->hash(); }

std::string Tokenizer::hash_hex() const {
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(hash()));
  return hex;
}

void Tokenizer::save(const std::filesystem::path& tokenizer_json) const {
  replace_file(tokenizer_json, "tokenizer", detail::to_tokenizer_json(model_->definition()));
}

}  // namespace dlf::tokenizers
