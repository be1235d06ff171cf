#include <dlf/tokenizers/id_text.h>

#include <cctype>
#include <charconv>

#include <dlf/error.h>

namespace dlf::tokenizers {

void append_ids_text(const std::vector<uint32_t>& ids, std::string& out) {
  char number[16];
  for (size_t i = 0; i < ids.size(); ++i) {
    if (i > 0) out += ' ';
    out.append(number, std::to_chars(number, number + sizeof number, ids[i]).ptr);
  }
}

std::string decode_ids_text(const Tokenizer& tokenizer, std::string_view text,
                            const std::string& source) {
  std::string bytes;
  for (size_t pos = 0; pos < text.size();) {
    if (std::isspace(static_cast<unsigned char>(text[pos]))) {
      ++pos;
      continue;
    }
    uint32_t id = 0;
    const auto [end, ec] = std::from_chars(text.data() + pos, text.data() + text.size(), id);
    const size_t stop = text.find_first_of(" \t\r\n\v\f", pos);
    DLF_CHECK(ec == std::errc() && (end == text.data() + text.size() ||
                                    std::isspace(static_cast<unsigned char>(*end))),
              source == "-" ? "standard input" : source, ": \"",
              text.substr(pos, stop == std::string::npos ? stop : stop - pos), "\" at byte ", pos,
              " is not a token id (whole numbers separated by whitespace)");
    bytes += tokenizer.token_bytes(id);
    pos = size_t(end - text.data());
  }
  return bytes;
}

}  // namespace dlf::tokenizers
