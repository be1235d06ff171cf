// Tokenizer files, small ones written here: GPT-2's encoder.json + vocab.bpe, tokenizer.json as
// GPT-2's and Llama 3's are written, tiktoken's rank file and npm JSON; save and load; the hash;
// decode; what a bad file or a missing name says.
#include <doctest/doctest.h>

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "test_util.h"
#include "tiny_vocab.h"
#include "tokenizers/byte_level.h"
#include "tokenizers/encodings.h"
#include "tokenizers/files.h"

using namespace dlf::tokenizers;
using namespace dlf::tokenizers::test;
using dlf::test::check_error;
namespace fs = std::filesystem;

namespace {

struct TempDir {
  static inline int made = 0;
  fs::path path = fs::temp_directory_path() / ("dlf_tokenizer_test_" + std::to_string(::getpid()) +
                                               "_" + std::to_string(made++));
  TempDir() {
    fs::remove_all(path);
    fs::create_directories(path);
  }
  ~TempDir() { fs::remove_all(path); }
  fs::path write(const std::string& name, const std::string& text) const {
    std::ofstream(path / name, std::ios::binary) << text;
    return path / name;
  }
};

// A vocabulary as encoder.json spells it: the 256 bytes, then " t" (256), "he" (257), " the"
// (258), then `more` entries.
std::string spelled_vocab(const std::string& more = "") {
  std::string json = "{";
  for (int b = 0; b < 256; ++b)
    json += dlf::json::quote(detail::to_byte_level(std::string(1, char(b)))) + ": " +
            std::to_string(b) + ", ";
  return json + R"("Ġt": 256, "he": 257, "Ġthe": 258)" + more + "}";
}
// " the" merges Ġ t, then h e, then Ġt he.
const char* const kMerges = "#version: 0.2\nĠ t\nh e\nĠt he\n";

}  // namespace

TEST_CASE("GPT-2's encoder.json and vocab.bpe: byte-level spellings, <|endoftext|> special") {
  TempDir dir;
  dir.write("encoder.json", spelled_vocab(R"(, "<|endoftext|>": 259)"));
  dir.write("vocab.bpe", kMerges);
  const Tokenizer t = Tokenizer::load(dir.path.string());
  // " the", " tho", "he": the regex's pieces " the" | " tho" | " he".
  CHECK(t.encode(" the tho he") == std::vector<uint32_t>{258, 256, 'h', 'o', ' ', 257});
  CHECK(t.vocab_size() == 260);
  CHECK(t.end_of_text() == 259u);
  CHECK(t.encode("<|endoftext|>").size() == 13);  // as text: <| endoftext |>, byte by byte
  CHECK(t.encode("a<|endoftext|>", Specials::recognised) == std::vector<uint32_t>{'a', 259});
  CHECK(t.decode(std::vector<uint32_t>{258, 259}) == " the<|endoftext|>");
  CHECK(t.pattern() == detail::kGpt2Pattern);
  // Hugging Face's names for the same files.
  TempDir hf;
  fs::copy_file(dir.path / "encoder.json", hf.path / "vocab.json");
  fs::copy_file(dir.path / "vocab.bpe", hf.path / "merges.txt");
  CHECK(Tokenizer::load(hf.path.string()).hash() == t.hash());
}

TEST_CASE("tokenizer.json as GPT-2's (ByteLevel) and Llama 3's (Split + ByteLevel) are written") {
  TempDir dir;
  const std::string gpt2 =
      R"({"added_tokens": [{"id": 259, "content": "<|endoftext|>", "special": true}],
          "normalizer": null,
          "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": true,
                            "use_regex": true},
          "decoder": {"type": "ByteLevel"},
          "model": {"type": "BPE", "dropout": null, "unk_token": null,
                    "continuing_subword_prefix": "", "end_of_word_suffix": "", "fuse_unk": false,
                    "vocab": )" +
      spelled_vocab(R"(, "<|endoftext|>": 259)") + R"(, "merges": ["Ġ t", "h e", "Ġt he"]}})";
  const Tokenizer t = Tokenizer::load(dir.write("tokenizer.json", gpt2).string());
  CHECK(t.encode(" the tho he") == std::vector<uint32_t>{258, 256, 'h', 'o', ' ', 257});
  CHECK(t.encode("<|endoftext|>", Specials::recognised) == std::vector<uint32_t>{259});
  CHECK(t.vocab_size() == 260);

  // Llama 3's shape: cl100k's regex in a Split, merges as pairs, ignore_merges, special tokens
  // past the vocabulary. "the" is a token that no merge makes: whole, it is that token.
  const std::string llama3 =
      R"({"added_tokens": [{"id": 300, "content": "<|begin_of_text|>", "special": true},
                           {"id": 301, "content": "<|end_of_text|>", "special": true}],
          "normalizer": null,
          "pre_tokenizer": {"type": "Sequence", "pretokenizers": [
              {"type": "Split", "pattern": {"Regex": )" +
      dlf::json::quote(std::string(detail::find_encoding("cl100k_base")->pattern)) +
      R"(}, "behavior": "Isolated", "invert": false},
              {"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": true,
               "use_regex": false}]},
          "post_processor": {"type": "TemplateProcessing"},
          "decoder": {"type": "ByteLevel"},
          "model": {"type": "BPE", "ignore_merges": true, "vocab": )" +
      spelled_vocab(R"(, "the": 260)") + R"(, "merges": [["Ġ", "t"], ["h", "e"], ["Ġt", "he"]]}})";
  fs::create_directories(dir.path / "llama");
  dir.write("llama/tokenizer.json", llama3);
  const Tokenizer l = Tokenizer::load((dir.path / "llama").string());
  CHECK(l.encode("the the 12345") == std::vector<uint32_t>{260, 258, ' ', '1', '2', '3', '4', '5'});
  CHECK(l.end_of_text() == 301u);
  CHECK(l.special_id("<|begin_of_text|>") == 300u);
  CHECK(l.vocab_size() == 302);
  CHECK(l.pattern() == detail::find_encoding("cl100k_base")->pattern);
}

TEST_CASE("tiktoken's rank file (by its name) and npm JSON") {
  TempDir dir;
  // Ranks: the bytes in order, then "ab" (256) and "abc" (257), in base64.
  std::string ranks;
  const auto base64 = [](const std::string& bytes) {
    static const char* digits = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    std::string out;
    for (size_t i = 0; i < bytes.size(); i += 3) {
      uint32_t v = uint32_t(static_cast<unsigned char>(bytes[i])) << 16;
      if (i + 1 < bytes.size()) v |= uint32_t(static_cast<unsigned char>(bytes[i + 1])) << 8;
      if (i + 2 < bytes.size()) v |= static_cast<unsigned char>(bytes[i + 2]);
      for (size_t k = 0; k < 4; ++k)
        out += k <= bytes.size() - i ? digits[v >> (18 - 6 * k) & 63] : '=';
    }
    return out;
  };
  for (int b = 0; b < 256; ++b)
    ranks += base64(std::string(1, char(b))) + " " + std::to_string(b) + "\n";
  ranks += base64("ab") + " 256\n" + base64("abc") + " 257\n";
  const Tokenizer t = Tokenizer::load(dir.write("cl100k_base.tiktoken", ranks).string());
  CHECK(t.encode("abc abcd I'M") == std::vector<uint32_t>{257, ' ', 257, 'd', ' ', 'I', '\'', 'M'});
  CHECK(t.vocab_size() == 100277);  // cl100k_base's special tokens, up to <|endofprompt|>
  CHECK(t.end_of_text() == 100257u);
  check_error([&] { t.decode(std::vector<uint32_t>{100256}); }, {"100256", "unused"});
  check_error([&] { Tokenizer::load(dir.write("mine.tiktoken", ranks).string()); },
              {"mine", "cl100k_base, o200k_base"});

  // The npm JSON: the ranks as "! FIRST token token ..." lines, with its own regex.
  std::string lines = "! 0";
  for (int b = 0; b < 256; ++b) lines.append(" ").append(base64(std::string(1, char(b))));
  lines.append("\n! 256 ").append(base64("ab")).append(" ").append(base64("abc"));
  const std::string json = R"({"pat_str": "\\S+|\\s+", "special_tokens": {"<|endoftext|>": 258},
                               "bpe_ranks": )" +
                           dlf::json::quote(lines) + "}";
  const Tokenizer n = Tokenizer::load(dir.write("tiny.json", json).string());
  CHECK(n.encode("abc abcd") == std::vector<uint32_t>{257, ' ', 257, 'd'});
  CHECK(n.vocab_size() == 259);
}

TEST_CASE("save writes a tokenizer.json that loads back to the same ids and hash") {
  Definition d = byte_vocab({"ab", "abc", " ab"});
  d.rule = Definition::Rule::listed;
  d.whole_piece_first = false;
  d.merges = {{'a', 'b'}, {256, 'c'}, {' ', 256}};
  d.specials = {{"<|endoftext|>", 259}};
  const Tokenizer t = make(d);
  TempDir dir;
  t.save(dir.path / "tokenizer.json");
  const Tokenizer back = Tokenizer::load((dir.path / "tokenizer.json").string());
  const std::string text = "abc ab abcab <|endoftext|>\xff";
  CHECK(back.encode(text) == t.encode(text));
  CHECK(back.encode(text, Specials::recognised) == t.encode(text, Specials::recognised));
  CHECK(back.hash() == t.hash());
  CHECK(back.source() == (dir.path / "tokenizer.json").string());
  // A tiktoken rank file has no merge list to write.
  check_error([] { make(byte_vocab({"ab"})).save("/tmp/never.json"); }, {"merges by rank"});
}

TEST_CASE("the hash: what decides the ids, not where the files are") {
  Definition d = byte_vocab({"ab"});
  // Pinned: a change here changes the hash of every tokenizer that token files record.
  CHECK(make(d).hash_hex() == "e5f2ce15d4f89cf7");
  Definition moved = d;
  moved.source = "elsewhere";
  CHECK(make(moved).hash() == make(d).hash());
  Definition other = d;
  other.tokens[256] = "ba";
  CHECK(make(other).hash() != make(d).hash());
  Definition regex = d;
  regex.pattern = "\\S+";
  CHECK(make(regex).hash() != make(d).hash());
  Definition special = d;
  special.specials = {{"<|endoftext|>", 257}};
  CHECK(make(special).hash() != make(d).hash());
}

TEST_CASE("decode round-trips every byte string; unknown ids are errors") {
  const Tokenizer t = make(byte_vocab({"ab", "\xe2\x82"}, std::string(detail::kGpt2Pattern)));
  std::string all;
  for (int b = 0; b < 256; ++b) all += char(b);
  for (const std::string& s : {all, all + all, std::string("\xe2\x82\xac\xe2\x82"), std::string()})
    CHECK(t.decode(t.encode(s)) == s);
  CHECK(t.token_bytes(256) == "ab");
  check_error([&] { t.decode(std::vector<uint32_t>{258}); }, {"token id 258", "ids below 258"});
}

TEST_CASE("bad files and names say what is wrong") {
  TempDir dir;
  check_error(
      [&] { Tokenizer::load(dir.write("a.json", R"({"model": {"type": "WordPiece"}})").string()); },
      {"a.json", "WordPiece", "not BPE"});
  const std::string bpe = R"({"model": {"type": "BPE", "vocab": {}, "merges": []}, )";
  check_error(
      [&] {
        Tokenizer::load(dir.write("b.json", bpe + R"("normalizer": {"type": "NFC"}})").string());
      },
      {"b.json", "normalizer NFC"});
  check_error(
      [&] {
        Tokenizer::load(
            dir.write("c.json", bpe + R"("pre_tokenizer": {"type": "Whitespace"}})").string());
      },
      {"c.json", "pre-tokenizer Whitespace"});
  check_error(
      [&] {
        Tokenizer::load(
            dir.write("d.json", bpe + R"("pre_tokenizer": {"type": "ByteLevel"}})").string());
      },
      {"d.json", "no token for the byte", "not a byte-level BPE"});
  dir.write("encoder.json", spelled_vocab());
  dir.write("vocab.bpe", "#version: 0.2\nĠ xyz\n");
  check_error([&] { Tokenizer::load(dir.path.string()); },
              {"vocab.bpe line 2", "\"Ġ xyz\"", "not in the vocabulary"});
  dir.write("vocab.bpe", "#version: 0.2\nĠ x\n");
  check_error([&] { Tokenizer::load(dir.path.string()); }, {"merge 0 makes \" x\"", "not a token"});
  dir.write("vocab.bpe", "#version: 0.2\nĠtx\n");
  check_error([&] { Tokenizer::load(dir.path.string()); }, {"line 2", "two tokens and one space"});
  check_error([&] { Tokenizer::load(dir.write("x.tiktoken", "").string()); }, {"x.tiktoken"});
  check_error([&] { Tokenizer::load(dir.write("p50k_base.tiktoken", "!!! 0\n").string()); },
              {"line 1", "not a token in base64"});
  check_error([] { Tokenizer::load("gpt3"); }, {"gpt3", "no file or directory", "cl100k_base"});
  ::setenv("DLF_TOKENIZER_CACHE", dir.path.c_str(), 1);
  check_error([] { Tokenizer::load("o200k_base"); },
              {"o200k_base", "scripts/reference_tokenizers.sh"});
  ::unsetenv("DLF_TOKENIZER_CACHE");
}
