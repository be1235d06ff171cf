#include "core/json.h"

#include <dlf/error.h>

namespace dlf::json {
namespace {

constexpr int kMaxDepth = 128;

bool is_digit(char c) { return c >= '0' && c <= '9'; }

// The length of the UTF-8 sequence starting at s[i], or 0 if it is not a valid one (overlong
// forms, surrogates and code points past U+10FFFF are not).
size_t utf8_length(std::string_view s, size_t i) {
  const auto byte = [&](size_t k) { return static_cast<unsigned char>(s[k]); };
  const unsigned char lead = byte(i);
  if (lead < 0x80) return 1;
  size_t n = 0;
  uint32_t cp = 0, min = 0;
  if ((lead & 0xe0) == 0xc0)
    n = 2, cp = lead & 0x1f, min = 0x80;
  else if ((lead & 0xf0) == 0xe0)
    n = 3, cp = lead & 0x0f, min = 0x800;
  else if ((lead & 0xf8) == 0xf0)
    n = 4, cp = lead & 0x07, min = 0x10000;
  else
    return 0;
  if (i + n > s.size()) return 0;
  for (size_t k = 1; k < n; ++k) {
    if ((byte(i + k) & 0xc0) != 0x80) return 0;
    cp = cp << 6 | (byte(i + k) & 0x3f);
  }
  if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return 0;
  return n;
}

void append_utf8(std::string& out, uint32_t cp) {
  if (cp < 0x80) {
    out += char(cp);
  } else if (cp < 0x800) {
    out += char(0xc0 | cp >> 6);
    out += char(0x80 | (cp & 0x3f));
  } else if (cp < 0x10000) {
    out += char(0xe0 | cp >> 12);
    out += char(0x80 | (cp >> 6 & 0x3f));
    out += char(0x80 | (cp & 0x3f));
  } else {
    out += char(0xf0 | cp >> 18);
    out += char(0x80 | (cp >> 12 & 0x3f));
    out += char(0x80 | (cp >> 6 & 0x3f));
    out += char(0x80 | (cp & 0x3f));
  }
}

class Parser {
 public:
  explicit Parser(std::string_view text) : t_(text) {}

  Value document() {
    skip_space();
    Value v = value(0);
    skip_space();
    if (pos_ != t_.size()) fail("text after the value");
    return v;
  }

 private:
  [[noreturn]] void fail(const std::string& what) const {
    throw Error("JSON: " + what + " at byte " + std::to_string(pos_));
  }
  char peek() const { return pos_ < t_.size() ? t_[pos_] : '\0'; }
  void expect(char c) {
    if (peek() != c) fail(std::string("expected '") + c + "'");
    ++pos_;
  }
  void skip_space() {
    while (pos_ < t_.size() &&
           (t_[pos_] == ' ' || t_[pos_] == '\t' || t_[pos_] == '\n' || t_[pos_] == '\r'))
      ++pos_;
  }

  Value value(int depth) {
    if (depth > kMaxDepth) fail("values nested deeper than 128 levels");
    Value v;
    switch (peek()) {
      case '{':
        return object(depth);
      case '[':
        return array(depth);
      case '"':
        v.kind = Value::Kind::string;
        v.text = string_literal();
        return v;
      case 't':
        word("true");
        v.kind = Value::Kind::boolean;
        v.boolean = true;
        return v;
      case 'f':
        word("false");
        v.kind = Value::Kind::boolean;
        return v;
      case 'n':
        word("null");
        return v;
      default:
        if (peek() == '-' || is_digit(peek())) return number();
        fail(pos_ < t_.size() ? "unexpected character" : "unexpected end");
    }
  }

  void word(std::string_view w) {
    if (t_.substr(pos_, w.size()) != w) fail("unexpected character");
    pos_ += w.size();
  }

  Value object(int depth) {
    Value v;
    v.kind = Value::Kind::object;
    ++pos_;
    skip_space();
    if (peek() == '}') {
      ++pos_;
      return v;
    }
    for (;;) {
      skip_space();
      if (peek() != '"') fail("expected a member name");
      std::string key = string_literal();
      skip_space();
      expect(':');
      skip_space();
      v.members.push_back({std::move(key), value(depth + 1)});
      skip_space();
      if (peek() != ',') break;
      ++pos_;
    }
    expect('}');
    return v;
  }

  Value array(int depth) {
    Value v;
    v.kind = Value::Kind::array;
    ++pos_;
    skip_space();
    if (peek() == ']') {
      ++pos_;
      return v;
    }
    for (;;) {
      skip_space();
      v.items.push_back(value(depth + 1));
      skip_space();
      if (peek() != ',') break;
      ++pos_;
    }
    expect(']');
    return v;
  }

  Value number() {
    const size_t start = pos_;
    if (peek() == '-') ++pos_;
    if (peek() == '0') {
      ++pos_;
    } else if (is_digit(peek())) {
      while (is_digit(peek())) ++pos_;
    } else {
      fail("a number without digits");
    }
    if (peek() == '.') {
      ++pos_;
      if (!is_digit(peek())) fail("a number without digits after '.'");
      while (is_digit(peek())) ++pos_;
    }
    if (peek() == 'e' || peek() == 'E') {
      ++pos_;
      if (peek() == '+' || peek() == '-') ++pos_;
      if (!is_digit(peek())) fail("a number without digits in its exponent");
      while (is_digit(peek())) ++pos_;
    }
    Value v;
    v.kind = Value::Kind::number;
    v.text = std::string(t_.substr(start, pos_ - start));
    return v;
  }

  uint32_t hex4() {
    uint32_t cp = 0;
    for (int k = 0; k < 4; ++k, ++pos_) {
      const char c = peek();
      const int digit = is_digit(c)              ? c - '0'
                        : (c >= 'a' && c <= 'f') ? c - 'a' + 10
                        : (c >= 'A' && c <= 'F') ? c - 'A' + 10
                                                 : -1;
      if (digit < 0) fail("a \\u escape without 4 hex digits");
      cp = cp << 4 | uint32_t(digit);
    }
    return cp;
  }

  std::string string_literal() {
    std::string out;
    ++pos_;  // the opening quote
    for (;;) {
      if (pos_ >= t_.size()) fail("an unterminated string");
      const auto c = static_cast<unsigned char>(t_[pos_]);
      if (c == '"') {
        ++pos_;
        return out;
      }
      if (c < 0x20) fail("a control character in a string");
      if (c == '\\') {
        escape(out);
        continue;
      }
      const size_t n = utf8_length(t_, pos_);
      if (n == 0) fail("text that is not UTF-8");
      out.append(t_.substr(pos_, n));
      pos_ += n;
    }
  }

  void escape(std::string& out) {
    ++pos_;
    const char c = peek();
    ++pos_;
    switch (c) {
      case '"':
      case '\\':
      case '/':
        out += c;
        return;
      case 'b':
        out += '\b';
        return;
      case 'f':
        out += '\f';
        return;
      case 'n':
        out += '\n';
        return;
      case 'r':
        out += '\r';
        return;
      case 't':
        out += '\t';
        return;
      case 'u':
        break;
      default:
        --pos_;
        fail("an unknown escape");
    }
    uint32_t cp = hex4();
    if (cp >= 0xdc00 && cp <= 0xdfff) fail("a lone low surrogate");
    if (cp >= 0xd800 && cp <= 0xdbff) {
      if (t_.substr(pos_, 2) != "\\u") fail("a high surrogate without its low one");
      pos_ += 2;
      const uint32_t low = hex4();
      if (low < 0xdc00 || low > 0xdfff) fail("a high surrogate without its low one");
      cp = 0x10000 + ((cp - 0xd800) << 10) + (low - 0xdc00);
    }
    append_utf8(out, cp);
  }

  std::string_view t_;
  size_t pos_ = 0;
};

}  // namespace

const Value* Value::find(std::string_view key) const {
  for (const auto& [name, v] : members)
    if (name == key) return &v;
  return nullptr;
}

std::optional<uint64_t> Value::as_uint64() const {
  if (kind != Kind::number || text.empty() || (text.size() > 1 && text[0] == '0')) return {};
  uint64_t n = 0;
  for (const char c : text) {
    if (!is_digit(c) || __builtin_mul_overflow(n, 10u, &n) ||
        __builtin_add_overflow(n, uint64_t(c - '0'), &n))
      return {};
  }
  return n;
}

Value parse(std::string_view text) { return Parser(text).document(); }

std::string quote(std::string_view s) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out = "\"";
  for (size_t i = 0; i < s.size();) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += char(c);
    } else if (c < 0x20) {
      out += "\\u00";
      out += kHex[c >> 4];
      out += kHex[c & 0xf];
    } else {
      const size_t n = utf8_length(s, i);
      DLF_CHECK(n > 0, "JSON: text that is not UTF-8 (byte ", i, " of \"", s.substr(0, 40), "\")");
      out.append(s.substr(i, n));
      i += n;
      continue;
    }
    ++i;
  }
  return out + "\"";
}

}  // namespace dlf::json
