// BPE training: tiny corpora whose merges are worked out by hand, determinism, and the saved
// tokenizer.json encoding as the trained tokenizer does.
#include <doctest/doctest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>

#include <dlf/tokenizers/train.h>

#include "test_util.h"

using namespace dlf::tokenizers;
using dlf::test::check_error;
namespace fs = std::filesystem;

namespace {

Tokenizer train(const std::vector<std::string>& texts, TrainOptions options) {
  BpeTrainer trainer(std::move(options));
  for (const std::string& t : texts) trainer.add_text(t);
  return trainer.train();
}

// A corpus of words drawn from a small vocabulary with Zipf-like frequencies, some of them
// capitalised, digits and punctuation between: the same every run.
std::string corpus(uint32_t seed, size_t words) {
  static const char* vocabulary[] = {"the",  "of",    "and",      "tokenizer", "merge",
                                     "byte", "pair",  "encoding", "données",   "日本",
                                     "🙂", "can't", "1984",     "!"};
  std::mt19937 rng(seed);
  std::string out;
  for (size_t i = 0; i < words; ++i) {
    const size_t k = std::min<size_t>(rng() % 14, rng() % 14);
    std::string w = vocabulary[k];
    if (rng() % 7 == 0) w[0] = char(std::toupper(static_cast<unsigned char>(w[0])));
    out += (rng() % 11 == 0 ? "\n" : " ") + w;
  }
  return out;
}

}  // namespace

TEST_CASE("a tiny corpus, by hand: the most frequent pair first, counted within pieces") {
  // Pieces: "ab", " ab" twice, " abc". Pairs: (a,b) 4, (' ',a) 3, (b,c) 1.
  //   merge 1: (a,b) -> 256 "ab"; pairs now (' ',ab) 3, (ab,c) 1
  //   merge 2: (' ',256) -> 257 " ab"; (257,c) 1 is below min_frequency 2: done
  const Tokenizer t = train({"ab ab ab abc"}, {.vocab_size = 300});
  CHECK(t.vocab_size() == 259);  // 256 bytes, 2 merges, <|endoftext|>
  CHECK(t.token_bytes(256) == "ab");
  CHECK(t.token_bytes(257) == " ab");
  CHECK(t.end_of_text() == 258u);
  CHECK(t.encode(" abc ab") == std::vector<uint32_t>{257, 'c', 257});
}

TEST_CASE("ties go to the smaller pair of ids; overlapping pairs merge left to right") {
  // "ab", " cd": (' ',c), (a,b), (c,d) once each: (32,99) is the smallest -> 256 " c"; then
  // (97,98) -> 257 "ab"; then (256,100) -> 258 " cd".
  const Tokenizer t =
      train({"ab cd"}, {.vocab_size = 259, .special_tokens = {}, .min_frequency = 1});
  CHECK(t.token_bytes(256) == " c");
  CHECK(t.token_bytes(257) == "ab");
  CHECK(t.token_bytes(258) == " cd");
  // "aaaaa": (a,a) 4 times -> 256 "aa", the piece now aa aa a: (aa,aa) and (aa,a) once each,
  // and (256,97) is the smaller -> 257 "aaa". Encoding merges (a,a) left to right, then (aa,a).
  const Tokenizer a =
      train({"aaaaa"}, {.vocab_size = 258, .special_tokens = {}, .min_frequency = 1});
  CHECK(a.token_bytes(256) == "aa");
  CHECK(a.token_bytes(257) == "aaa");
  CHECK(a.encode("aaaaa") == std::vector<uint32_t>{256, 257});
}

TEST_CASE("training is deterministic: same merges, same file, whatever the order of texts") {
  const std::string one = corpus(1, 20000), two = corpus(2, 20000);
  const TrainOptions options{.vocab_size = 320};
  const Tokenizer a = train({one, two}, options);
  const Tokenizer b = train({two, one}, options);
  CHECK(a.vocab_size() == 320);
  CHECK(a.hash() == b.hash());
  const fs::path dir = fs::temp_directory_path() / ("dlf_train_test_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  a.save(dir / "a.json");
  b.save(dir / "b.json");
  const auto read = [](const fs::path& p) {
    std::ostringstream s;
    s << std::ifstream(p, std::ios::binary).rdbuf();
    return s.str();
  };
  CHECK(read(dir / "a.json") == read(dir / "b.json"));

  // The saved file is the trained tokenizer: same ids on text it saw and text it did not.
  const Tokenizer back = Tokenizer::load((dir / "a.json").string());
  fs::remove_all(dir);
  CHECK(back.hash() == a.hash());
  const std::string unseen = corpus(3, 5000) + " \xff\xfe Zürich 12345";
  for (const std::string& text : {one, unseen}) {
    const std::vector<uint32_t> ids = a.encode(text);
    CHECK(back.encode(text) == ids);
    CHECK(a.decode(ids) == text);
  }
  // The merges learnt compress the text they came from: about 4 bytes a token here.
  CHECK(a.encode(one).size() * 3 < one.size());
}

TEST_CASE("training refuses options that cannot make a tokenizer") {
  check_error([] { BpeTrainer({.vocab_size = 256}); }, {"vocabulary of 256", "at least 257"});
  check_error([] { BpeTrainer({.special_tokens = {"<|x|>", "<|x|>"}}); }, {"<|x|>", "twice"});
  check_error([] { BpeTrainer({.pattern = "(("}); }, {"((", "PCRE2"});
}

TEST_CASE("bpe train: from files, as from their texts, counting their bytes") {
  const fs::path dir = fs::temp_directory_path() / ("dlf_train_files_" + std::to_string(getpid()));
  fs::create_directories(dir);
  const std::vector<std::string> texts = {"ab ab ab abc", "abc abc"};
  std::vector<std::string> files;
  for (size_t i = 0; i < texts.size(); ++i) {
    files.push_back((dir / std::to_string(i)).string());
    std::ofstream(files.back()) << texts[i];
  }
  const FilesTraining t = train_files({.vocab_size = 300}, files);
  CHECK(t.bytes == 12 + 7);
  CHECK(t.distinct_pieces == 4);  // "ab", " ab", " abc", "abc"
  CHECK(t.tokenizer.hash_hex() == train(texts, {.vocab_size = 300}).hash_hex());
  check_error([&] { train_files({}, {dir.string()}); }, {"is a directory: pass its text files"});
  fs::remove_all(dir);
}
