// Pre-tokenisation: a text cut into pieces by a regex (PCRE2, JIT-compiled, Unicode classes),
// every byte in exactly one piece. Bytes no match covers (bytes that are not UTF-8, or text a
// custom regex skips) are pieces of their own, as Hugging Face's Split(behavior: Isolated) makes.
#pragma once
#include <cstddef>
#include <string>
#include <string_view>

struct pcre2_real_code_8;
struct pcre2_real_match_data_8;
struct pcre2_real_match_context_8;
struct pcre2_real_jit_stack_8;

namespace dlf::tokenizers::detail {

// `regex` (tiktoken's and Hugging Face's syntax: Rust's regex, Oniguruma) in PCRE2's: `\s` and
// `\S` become the classes of Unicode's White_Space, which Rust's and Python's `\s` are (PCRE2's
// also matches U+180E, which Unicode 6.3 took out).
std::string to_pcre2(std::string_view regex);

// A compiled regex (immutable: any number of Splitters may share it).
class Pattern {
 public:
  explicit Pattern(const std::string& regex);  // a dlf::Error names a regex PCRE2 refuses
  ~Pattern();
  Pattern(const Pattern&) = delete;
  Pattern& operator=(const Pattern&) = delete;
  pcre2_real_code_8* code() const { return code_; }

 private:
  pcre2_real_code_8* code_ = nullptr;
};

// One thread's matching of a Pattern over texts: reset(text), then next() until it is false.
class Splitter {
 public:
  explicit Splitter(const Pattern& pattern);
  ~Splitter();
  Splitter(const Splitter&) = delete;
  Splitter& operator=(const Splitter&) = delete;

  void reset(std::string_view text);
  // The next piece of the text, in order; false at its end.
  bool next(std::string_view& piece);

 private:
  const Pattern& pattern_;
  pcre2_real_match_data_8* match_ = nullptr;
  pcre2_real_match_context_8* context_ = nullptr;
  pcre2_real_jit_stack_8* stack_ = nullptr;
  std::string_view text_;
  size_t pos_ = 0;                          // where the next piece starts
  size_t match_start_ = 0, match_end_ = 0;  // a match found after a gap, not yet returned
  bool pending_ = false;
};

}  // namespace dlf::tokenizers::detail
