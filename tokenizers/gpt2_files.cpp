// GPT-2's own files (encoder.json, vocab.bpe), and what tokenizer.json shares with them: a
// vocabulary and merges spelled in the byte-level alphabet.
#include <fstream>
#include <iterator>

#include <dlf/error.h>

#include "byte_level.h"
#include "encodings.h"
#include "files.h"

namespace dlf::tokenizers::detail {

std::string read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  DLF_CHECK(in.good(), "cannot read tokenizer file ", path.string());
  std::string bytes{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  DLF_CHECK(!in.bad(), "cannot read tokenizer file ", path.string());
  return bytes;
}

json::Value read_json(const fs::path& path) {
  try {
    return json::parse(read_file(path));
  } catch (const Error& e) {
    throw Error("tokenizer file " + path.string() + ": " + e.what());
  }
}

void read_byte_level_vocab(const json::Value& vocab, bool endoftext_is_special, Definition& d,
                           StringMap<uint32_t>& spelled) {
  DLF_CHECK(vocab.kind == json::Value::Kind::object, d.source,
            ": the vocabulary is not a JSON object of tokens and ids");
  for (const json::Member& m : vocab.members) {
    const std::optional<uint64_t> id = m.value.as_uint64();
    DLF_CHECK(id && *id < (uint64_t(1) << 31), d.source, ": token ", m.name,
              " has no whole-number id below 2^31");
    const std::optional<std::string> bytes = from_byte_level(m.name);
    DLF_CHECK(bytes.has_value(), d.source, ": token ", m.name,
              " is not spelled in GPT-2's byte-level alphabet (not a byte-level BPE)");
    DLF_CHECK(spelled.insert(m.name, uint32_t(*id)), d.source, ": token ", m.name,
              " is listed twice");
    if (endoftext_is_special && *bytes == "<|endoftext|>") {
      d.specials.push_back({*bytes, uint32_t(*id)});
      continue;
    }
    if (d.tokens.size() <= *id) d.tokens.resize(*id + 1);
    DLF_CHECK(d.tokens[*id].empty(), d.source, ": id ", *id, " is given to two tokens");
    d.tokens[*id] = *bytes;
  }
}

std::pair<uint32_t, uint32_t> merge_of(std::string_view left, std::string_view right,
                                       const StringMap<uint32_t>& spelled,
                                       const std::string& source) {
  const uint32_t* l = spelled.find(left);
  const uint32_t* r = spelled.find(right);
  DLF_CHECK(l != nullptr && r != nullptr, source, ": the merge \"", left, " ", right,
            "\" joins a token that is not in the vocabulary");
  return {*l, *r};
}

Definition read_gpt2_files(const fs::path& encoder_json, const fs::path& vocab_bpe) {
  Definition d;
  d.source = encoder_json.string() + " + " + vocab_bpe.filename().string();
  d.pattern = kGpt2Pattern;
  d.rule = Definition::Rule::listed;
  d.whole_piece_first = true;  // as tiktoken's gpt2
  StringMap<uint32_t> spelled;
  read_byte_level_vocab(read_json(encoder_json), true, d, spelled);

  for_each_line(read_file(vocab_bpe), [&](std::string_view line, size_t number) {
    if (number == 1 && line.starts_with("#version")) return;
    const std::string where = vocab_bpe.string() + " line " + std::to_string(number);
    const size_t space = line.find(' ');
    DLF_CHECK(space != std::string_view::npos && line.find(' ', space + 1) == std::string::npos,
              where, ": a merge is two tokens and one space, not \"", line, "\"");
    d.merges.push_back(merge_of(line.substr(0, space), line.substr(space + 1), spelled, where));
  });
  return d;
}

}  // namespace dlf::tokenizers::detail
