#include "byte_level.h"

#include <array>
#include <cstdint>

namespace dlf::tokenizers::detail {
namespace {

// Printable Latin-1 bytes stand for themselves; the others (controls, space, soft hyphen...)
// take the code points from U+0100 on, in byte order.
struct Alphabet {
  std::array<uint16_t, 256> code_point{};  // byte → its character
  std::array<int16_t, 512> byte{};         // character → its byte, -1 for none
  Alphabet() {
    byte.fill(-1);
    uint16_t next = 256;
    for (int b = 0; b < 256; ++b) {
      const bool printable = (b >= '!' && b <= '~') || (b >= 0xa1 && b <= 0xac) || b >= 0xae;
      code_point[b] = printable ? uint16_t(b) : next++;
      byte[code_point[b]] = int16_t(b);
    }
  }
};

const Alphabet& alphabet() {
  static const Alphabet a;
  return a;
}

}  // namespace

std::string to_byte_level(std::string_view bytes) {
  std::string out;
  out.reserve(bytes.size() * 2);
  for (const char c : bytes) {
    const uint16_t cp = alphabet().code_point[static_cast<unsigned char>(c)];
    if (cp < 0x80) {
      out += char(cp);
    } else {  // below U+0800: two bytes
      out += char(0xc0 | cp >> 6);
      out += char(0x80 | (cp & 0x3f));
    }
  }
  return out;
}

std::optional<std::string> from_byte_level(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size();) {
    const auto lead = static_cast<unsigned char>(text[i]);
    uint32_t cp = lead;
    if (lead >= 0xc0 && lead < 0xe0 && i + 1 < text.size() &&
        (static_cast<unsigned char>(text[i + 1]) & 0xc0) == 0x80) {
      cp = (lead & 0x1fu) << 6 | (static_cast<unsigned char>(text[i + 1]) & 0x3fu);
      i += 2;
      if (cp < 0x80) return std::nullopt;  // an overlong form
    } else if (lead < 0x80) {
      i += 1;
    } else {
      return std::nullopt;
    }
    if (cp >= alphabet().byte.size() || alphabet().byte[cp] < 0) return std::nullopt;
    out += char(alphabet().byte[cp]);
  }
  return out;
}

}  // namespace dlf::tokenizers::detail
