// Merging by hand: the order of merges, tiktoken's rule against a merge list, whole pieces, long
// pieces, and the heap-based merge loop against tiktoken's quadratic one.
#include <doctest/doctest.h>

#include <chrono>
#include <random>
#include <thread>

#include "tiny_vocab.h"

using namespace dlf::tokenizers;
using namespace dlf::tokenizers::test;
using Rule = Definition::Rule;

TEST_CASE("by rank (tiktoken): the pair whose bytes make the lowest-ranked token merges first") {
  // ab=256, bc=257, abc=258: "abc" -> (a,b) at 256 before (b,c) at 257 -> ab c -> abc.
  Definition d = byte_vocab({"ab", "bc", "abc"});
  d.whole_piece_first = false;
  CHECK(ids(d, "abc") == std::vector<uint32_t>{258});
  // "bcab": (b,c)=257 and (a,b)=256; ab first, then bc; "bcab" is no token.
  CHECK(ids(d, "bcab") == std::vector<uint32_t>{257, 256});
  // Leftmost first among equals: aa=256, "aaa" -> aa a.
  CHECK(ids(byte_vocab({"aa"}), "aaa") == std::vector<uint32_t>{256, 'a'});
  CHECK(ids(byte_vocab({"aa"}), "aaaa") == std::vector<uint32_t>{256, 256});
}

TEST_CASE("listed merges (GPT-2's vocab.bpe, Hugging Face): only the listed pairs merge") {
  // The same tokens, but "abc" is listed as (a, bc) only: "abc" merges (a,b) first and then has
  // no listed pair left, so it stays ab c; by rank, (ab, c) makes abc.
  Definition d = byte_vocab({"ab", "bc", "abc"});
  d.rule = Rule::listed;
  d.whole_piece_first = false;
  d.merges = {{'a', 'b'}, {'b', 'c'}, {'a', 257}};
  CHECK(ids(d, "abc") == std::vector<uint32_t>{256, 'c'});
  CHECK(ids(d, "xbc") == std::vector<uint32_t>{'x', 257});
  // The list's order decides, not the ids: with (b,c) listed first, "abc" -> a bc -> abc.
  d.merges = {{'b', 'c'}, {'a', 'b'}, {'a', 257}};
  CHECK(ids(d, "abc") == std::vector<uint32_t>{258});
  // A piece that is a token is that token when pieces are looked up whole first (tiktoken,
  // Hugging Face's ignore_merges).
  d.merges = {{'a', 'b'}, {'b', 'c'}, {'a', 257}};
  d.whole_piece_first = true;
  CHECK(ids(d, "abc") == std::vector<uint32_t>{258});
  CHECK(ids(d, "abcabc") == std::vector<uint32_t>{256, 'c', 256, 'c'});
}

TEST_CASE("the regex's pieces are merged apart: no token spans two") {
  // "b " = 256: "ab ab" is the pieces "ab" and " ab", so the b and the space never meet.
  CHECK(ids(byte_vocab({"b "}, R"( ?\p{L}+|\s+)"), "ab ab") ==
        std::vector<uint32_t>{'a', 'b', ' ', 'a', 'b'});
  CHECK(ids(byte_vocab({"b "}, "(?s).+"), "ab ab") == std::vector<uint32_t>{'a', 256, 'a', 'b'});
}

TEST_CASE("a long piece merges in n log n: a megabyte of one letter") {
  // a, aa, aaaa, ...: each pass halves the parts. 2^20 bytes -> 2^20/2^4 tokens of 16 a's.
  const Definition d = byte_vocab({"aa", "aaaa", "aaaaaaaa", std::string(16, 'a')}, "a+");
  const std::string text(1 << 20, 'a');
  const auto start = std::chrono::steady_clock::now();
  const std::vector<uint32_t> got = ids(d, text);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  CHECK(got == std::vector<uint32_t>(1 << 16, 259));
  CHECK(seconds < 10);  // about 0.1 s; a merge loop quadratic in the piece takes hours
}

namespace {

// tiktoken's byte_pair_merge, as written there: rescan for the lowest rank after each merge.
std::vector<uint32_t> quadratic_merge(const Definition& d, std::string_view piece) {
  std::vector<size_t> starts;
  for (size_t i = 0; i <= piece.size(); ++i) starts.push_back(i);
  const auto rank = [&](size_t a, size_t b) -> uint32_t {
    const std::string_view s = piece.substr(a, b - a);
    for (uint32_t id = 0; id < d.tokens.size(); ++id)
      if (d.tokens[id] == s) return id;
    return ~0u;
  };
  for (;;) {
    size_t best = 0;
    uint32_t best_rank = ~0u;
    for (size_t i = 0; i + 2 < starts.size(); ++i) {
      const uint32_t r = rank(starts[i], starts[i + 2]);
      if (r < best_rank) best_rank = r, best = i;
    }
    if (best_rank == ~0u) break;
    starts.erase(starts.begin() + std::ptrdiff_t(best) + 1);
  }
  std::vector<uint32_t> out;
  for (size_t i = 0; i + 1 < starts.size(); ++i) out.push_back(rank(starts[i], starts[i + 1]));
  return out;
}

}  // namespace

TEST_CASE("the heap-based merge loop makes tiktoken's ids on random pieces and vocabularies") {
  std::mt19937 rng(7);
  for (int trial = 0; trial < 40; ++trial) {
    // Tokens over the letters a-c of 2 to 6 letters, ranked in random order.
    std::vector<std::string> extra;
    for (int k = 0; k < 30; ++k) {
      std::string t(2 + rng() % 5, 'a');
      for (char& c : t) c = char('a' + rng() % 3);
      if (std::find(extra.begin(), extra.end(), t) == extra.end()) extra.push_back(t);
    }
    Definition d = byte_vocab(extra, "[a-c]+");
    d.whole_piece_first = false;
    std::string piece(1 + rng() % 60, 'a');
    for (char& c : piece) c = char('a' + rng() % 3);
    INFO("piece ", piece);
    CHECK(ids(d, piece) == quadratic_merge(d, piece));
  }
}

TEST_CASE("an Encoder's piece cache gives the ids merging gives, also once it fills and restarts") {
  std::vector<std::string> extra;
  for (const char* t : {"ab", "bc", "abc", "ca", "cab", "bb", "abcab"}) extra.emplace_back(t);
  Definition d = byte_vocab(extra, R"([a-c]+|\s+)");
  d.whole_piece_first = false;
  const detail::Model model(d);
  // 100,000 random pieces of 1 to 14 letters: far more distinct ones than the cache holds.
  std::mt19937 rng(3);
  std::string text;
  for (int k = 0; k < 100000; ++k) {
    for (size_t n = 1 + rng() % 14; n > 0; --n) text += char('a' + rng() % 3);
    text += ' ';
  }
  std::vector<uint32_t> expected;
  detail::MergeScratch scratch;
  detail::Splitter splitter(model.pattern());
  splitter.reset(text);
  for (std::string_view piece; splitter.next(piece);) model.merge(piece, expected, scratch);
  Encoder encoder(make(d));
  for (int pass = 0; pass < 2; ++pass) {  // the second pass mostly from the cache
    std::vector<uint32_t> got;
    encoder.encode(text, got);
    CHECK(got == expected);
  }
}

TEST_CASE("one Tokenizer, an Encoder on each of four threads: the same ids as one thread") {
  Definition d = byte_vocab({"ab", "bc", "abc", "ca"}, R"([a-c]+|\s+)");
  const Tokenizer tokenizer = make(d);
  std::mt19937 rng(5);
  std::string text;
  for (int k = 0; k < 20000; ++k) text += std::string(1 + rng() % 9, char('a' + rng() % 3)) + " ";
  const std::vector<uint32_t> expected = tokenizer.encode(text);
  std::vector<std::vector<uint32_t>> got(4);
  std::vector<std::thread> threads;
  for (auto& ids : got)
    threads.emplace_back([&] {
      Encoder encoder(tokenizer);
      for (int pass = 0; pass < 3; ++pass) {
        ids.clear();
        encoder.encode(text, ids);
      }
    });
  for (std::thread& t : threads) t.join();
  for (const auto& ids : got) CHECK(ids == expected);
}
