#define PCRE2_CODE_UNIT_WIDTH 8
#include "pretokenizer.h"

#include <pcre2.h>

#include <dlf/error.h>

namespace dlf::tokenizers::detail {
namespace {

// Unicode's White_Space: what `\s` matches in Rust's regex and Python's.
constexpr std::string_view kWhiteSpace =
    "\\t\\n\\x0b\\f\\r\\x20\\x{85}\\x{a0}\\x{1680}\\x{2000}-\\x{200a}\\x{2028}\\x{2029}"
    "\\x{202f}\\x{205f}\\x{3000}";

std::string pcre2_message(int code) {
  PCRE2_UCHAR buffer[256];
  pcre2_get_error_message(code, buffer, sizeof buffer);
  return reinterpret_cast<const char*>(buffer);
}

// The length of the UTF-8 character at s[i] as a lead byte says, 1 for a byte that leads none.
size_t char_length(std::string_view s, size_t i) {
  const auto lead = static_cast<unsigned char>(s[i]);
  const size_t n = lead < 0xc0 ? 1 : lead < 0xe0 ? 2 : lead < 0xf0 ? 3 : 4;
  return std::min(n, s.size() - i);
}

}  // namespace

std::string to_pcre2(std::string_view regex) {
  std::string out;
  bool in_class = false;
  for (size_t i = 0; i < regex.size(); ++i) {
    const char c = regex[i];
    if (c == '\\' && i + 1 < regex.size()) {
      const char e = regex[++i];
      if (e == 's') {
        out += in_class ? std::string(kWhiteSpace) : "[" + std::string(kWhiteSpace) + "]";
      } else if (e == 'S') {
        DLF_CHECK(!in_class, "tokenizer regex ", regex,
                  ": \\S inside a character class is not supported (write [^\\s...] instead)");
        out += "[^" + std::string(kWhiteSpace) + "]";
      } else {
        out += c;
        out += e;
      }
      continue;
    }
    if (!in_class && c == '[') {
      in_class = true;
      out += c;
      // A ']' first in a class (after an optional '^') is a member, not its end.
      if (i + 1 < regex.size() && regex[i + 1] == '^') out += regex[++i];
      if (i + 1 < regex.size() && regex[i + 1] == ']') out += regex[++i];
      continue;
    }
    if (in_class && c == ']') in_class = false;
    out += c;
  }
  return out;
}

Pattern::Pattern(const std::string& regex) {
  const std::string translated = to_pcre2(regex);
  int error = 0;
  PCRE2_SIZE offset = 0;
  // UCP: \p{L}, \p{N} and case-insensitive matching by Unicode's tables. MATCH_INVALID_UTF:
  // bytes that are not UTF-8 match nothing and are left between matches.
  code_ = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(translated.data()), translated.size(),
                        PCRE2_UTF | PCRE2_UCP | PCRE2_MATCH_INVALID_UTF, &error, &offset, nullptr);
  DLF_CHECK(code_ != nullptr, "tokenizer regex ", regex, ": PCRE2 refuses it at offset ", offset,
            " of ", translated, ": ", pcre2_message(error));
  const int jit = pcre2_jit_compile(code_, PCRE2_JIT_COMPLETE);
  if (jit != 0) {
    pcre2_code_free(code_);
    throw Error("tokenizer regex " + regex +
                ": PCRE2's JIT compiler refuses it: " + pcre2_message(jit));
  }
}

Pattern::~Pattern() { pcre2_code_free(code_); }

Splitter::Splitter(const Pattern& pattern) : pattern_(pattern) {
  match_ = pcre2_match_data_create_from_pattern(pattern.code(), nullptr);
  context_ = pcre2_match_context_create(nullptr);
  // Backtracking over a long run of one class (a megabyte of spaces) needs more than the
  // default 32 KiB; the stack is reserved, and touched only as deep as a match goes.
  stack_ = pcre2_jit_stack_create(32 << 10, 64 << 20, nullptr);
  DLF_CHECK(match_ != nullptr && context_ != nullptr && stack_ != nullptr,
            "tokenizer: out of memory for PCRE2's match state");
  pcre2_jit_stack_assign(context_, nullptr, stack_);
}

Splitter::~Splitter() {
  pcre2_jit_stack_free(stack_);
  pcre2_match_context_free(context_);
  pcre2_match_data_free(match_);
}

void Splitter::reset(std::string_view text) {
  text_ = text;
  pos_ = 0;
  pending_ = false;
}

bool Splitter::next(std::string_view& piece) {
  if (pending_) {
    pending_ = false;
    piece = text_.substr(match_start_, match_end_ - match_start_);
    pos_ = match_end_;
    return true;
  }
  if (pos_ >= text_.size()) return false;
  const auto* subject = reinterpret_cast<PCRE2_SPTR>(text_.data());
  for (size_t from = pos_;;) {
    const int rc = from < text_.size() ? pcre2_jit_match(pattern_.code(), subject, text_.size(),
                                                         from, 0, match_, context_)
                                       : PCRE2_ERROR_NOMATCH;
    if (rc == PCRE2_ERROR_NOMATCH) {  // the rest is a gap
      piece = text_.substr(pos_);
      pos_ = text_.size();
      return true;
    }
    DLF_CHECK(rc >= 0, "tokenizer: PCRE2 failed to match at byte ", from, ": ", pcre2_message(rc));
    const PCRE2_SIZE* ovector = pcre2_get_ovector_pointer(match_);
    if (ovector[1] == ovector[0]) {  // an empty match cuts nothing: look past its character
      from = ovector[0] + char_length(text_, ovector[0]);
      continue;
    }
    if (ovector[0] > pos_) {  // a gap first, then the match
      piece = text_.substr(pos_, ovector[0] - pos_);
      match_start_ = ovector[0];
      match_end_ = ovector[1];
      pending_ = true;
      pos_ = ovector[0];
      return true;
    }
    piece = text_.substr(ovector[0], ovector[1] - ovector[0]);
    pos_ = ovector[1];
    return true;
  }
}

}  // namespace dlf::tokenizers::detail
