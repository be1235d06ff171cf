// Readers of tokenizer files (each a dlf::Error naming the file and the line or entry that is
// wrong) and the writer of tokenizer.json.
#pragma once
#include <filesystem>
#include <string>
#include <string_view>
#include <utility>

#include "core/json.h"
#include "flat_map.h"
#include "model.h"

namespace dlf::tokenizers::detail {

namespace fs = std::filesystem;

// A file's bytes.
std::string read_file(const fs::path& path);
// Calls `line(text, number)` for each line of `text` that is not empty (its "\r\n" or "\n"
// left out), numbered from 1.
template <typename Fn>
void for_each_line(std::string_view text, Fn&& line) {
  size_t number = 0;
  for (size_t pos = 0; pos < text.size();) {
    size_t end = text.find('\n', pos);
    if (end == std::string_view::npos) end = text.size();
    std::string_view l = text.substr(pos, end - pos);
    pos = end + 1;
    ++number;
    if (!l.empty() && l.back() == '\r') l.remove_suffix(1);
    if (!l.empty()) line(l, number);
  }
}
// A JSON file's value (a dlf::Error names the file).
json::Value read_json(const fs::path& path);

// A vocabulary spelled in GPT-2's byte-level alphabet ({"Ġthe": 262, ...}) into d.tokens;
// `spelled` gets each spelling's id. Its `<|endoftext|>` becomes a special token of d when
// `endoftext_is_special` (GPT-2's files), else stays a token too (tokenizer.json).
void read_byte_level_vocab(const json::Value& vocab, bool endoftext_is_special, Definition& d,
                           StringMap<uint32_t>& spelled);
// The merge of two spelled tokens ("Ġ", "t") as a pair of ids.
std::pair<uint32_t, uint32_t> merge_of(std::string_view left, std::string_view right,
                                       const StringMap<uint32_t>& spelled,
                                       const std::string& source);

// GPT-2's encoder.json and vocab.bpe (Hugging Face's vocab.json and merges.txt).
Definition read_gpt2_files(const fs::path& encoder_json, const fs::path& vocab_bpe);
// A tiktoken rank file (base64 token, space, rank: one a line), named by its encoding.
Definition read_tiktoken_file(const fs::path& path);
// A JSON file: Hugging Face's tokenizer.json, or tiktoken's npm JSON (pat_str, special_tokens,
// bpe_ranks).
Definition read_json_file(const fs::path& path);

// Hugging Face's tokenizer.json, parsed.
Definition read_tokenizer_json(const json::Value& root, const fs::path& path);

// `d` as a Hugging Face tokenizer.json (listed merges only).
std::string to_tokenizer_json(const Definition& d);

}  // namespace dlf::tokenizers::detail
