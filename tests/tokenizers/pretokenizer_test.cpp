// The regex splits, by hand: GPT-2's, cl100k_base's and o200k_base's regexes on the cases each
// alternative is there for; bytes that are not UTF-8; a regex that matches nothing or the empty
// string; PCRE2's \s made Rust's.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include <dlf/error.h>

#include "test_util.h"
#include "tokenizers/encodings.h"
#include "tokenizers/pretokenizer.h"

using namespace dlf::tokenizers::detail;
using Pieces = std::vector<std::string>;

namespace {

Pieces split(std::string_view regex, std::string_view text) {
  const Pattern pattern{std::string(regex)};
  Splitter splitter(pattern);
  splitter.reset(text);
  Pieces out;
  for (std::string_view piece; splitter.next(piece);) out.emplace_back(piece);
  return out;
}

std::string_view pattern_of(std::string_view name) { return find_encoding(name)->pattern; }

}  // namespace

TEST_CASE("GPT-2's regex: lowercase contractions, a space before words, whitespace runs") {
  const std::string_view gpt2 = pattern_of("gpt2");
  // \s+(?!\S) leaves a run's last character to what follows: " test" takes a space, but "I"
  // takes no newline, so the last newline is a piece alone.
  CHECK(split(gpt2, "Hello world's  test\n\nI'M 2024!!") ==
        Pieces{"Hello", " world", "'s", " ", " test", "\n", "\n", "I", "'", "M", " 2024", "!!"});
  // \s+(?!\S): a run of spaces gives its last to the word after it, and keeps all at the end.
  CHECK(split(gpt2, "a   b   ") == Pieces{"a", "  ", " b", "   "});
  CHECK(split(gpt2, "日本語 text ١٢٣") == Pieces{"日本語", " text", " ١٢٣"});
}

TEST_CASE("cl100k_base's regex: case-insensitive contractions, three digits, newlines") {
  const std::string_view cl100k = pattern_of("cl100k_base");
  CHECK(split(cl100k, "I'M 12345 x'ſ") == Pieces{"I", "'M", " ", "123", "45", " x", "'ſ"});
  CHECK(split(cl100k, "end.\r\n\r\n  next") == Pieces{"end", ".\r\n\r\n", " ", " next"});
  CHECK(split(cl100k, "$hello") == Pieces{"$hello"});
}

TEST_CASE("o200k_base's regex: words split at case changes, contractions kept on the word") {
  const std::string_view o200k = pattern_of("o200k_base");
  CHECK(split(o200k, "HelloWorld XMLHttpRequest don't") ==
        Pieces{"Hello", "World", " XMLHttp", "Request", " don't"});
  CHECK(split(o200k, "path/to/x") == Pieces{"path", "/to", "/x"});
}

TEST_CASE("bytes that are not UTF-8 are pieces of their own, runs of them one piece") {
  const std::string_view gpt2 = pattern_of("gpt2");
  CHECK(split(gpt2,
              "ab\xff\xfe"
              "cd") == Pieces{"ab", "\xff\xfe", "cd"});
  // A truncated character and a surrogate, between spaces: the spaces are still spaces.
  CHECK(split(gpt2, "x \xe2\x82 \xed\xa0\x80") ==
        Pieces{"x", " ", "\xe2\x82", " ", "\xed\xa0\x80"});
  CHECK(split(gpt2, "\x80") == Pieces{"\x80"});
}

TEST_CASE("a regex that skips text or matches the empty string: every byte is in one piece") {
  // x* matches the empty string everywhere: "ab", then the x, then the rest.
  CHECK(split("x*", "abxc") == Pieces{"ab", "x", "c"});
  CHECK(split("q", "abc") == Pieces{"abc"});
  CHECK(split("q", "") == Pieces{});
}

TEST_CASE("\\s is Unicode's White_Space, as in Rust and Python: U+180E is not, U+0085 is") {
  CHECK(
      to_pcre2(R"(a\sb[^\s\p{L}]\S)") ==
      "a[" + std::string(R"(\t\n\x0b\f\r\x20\x{85}\x{a0}\x{1680}\x{2000}-\x{200a}\x{2028})") +
          R"(\x{2029}\x{202f}\x{205f}\x{3000}]b[^\t\n\x0b\f\r\x20\x{85}\x{a0}\x{1680})" +
          R"(\x{2000}-\x{200a}\x{2028}\x{2029}\x{202f}\x{205f}\x{3000}\p{L}][^\t\n\x0b\f\r)" +
          R"(\x20\x{85}\x{a0}\x{1680}\x{2000}-\x{200a}\x{2028}\x{2029}\x{202f}\x{205f}\x{3000}])");
  CHECK(to_pcre2(R"([]\s]\\s)") == std::string("[]") + R"(\t\n\x0b\f\r\x20\x{85}\x{a0})" +
                                       R"(\x{1680}\x{2000}-\x{200a}\x{2028}\x{2029}\x{202f})" +
                                       R"(\x{205f}\x{3000}]\\s)");
  // U+180E (Mongolian vowel separator) is punctuation to tiktoken: it joins the '!' after it.
  CHECK(split(pattern_of("gpt2"), "a\u180e!") == Pieces{"a", "\u180e!"});
  CHECK(split(pattern_of("gpt2"), "a\u0085 b") == Pieces{"a", "\u0085", " b"});
  dlf::test::check_error([] { to_pcre2(R"([\S])"); }, {"\\S inside a character class"});
  dlf::test::check_error([] { Pattern p("(unclosed"); }, {"(unclosed", "PCRE2 refuses it"});
}
