#include <dlf/error.h>
#include <dlf/models/text_stream.h>

#include <algorithm>

namespace dlf::models {

TextStream::TextStream(int64_t rows, TokenText token_text, std::vector<std::string> stops,
                       Emit emit)
    : token_text_(std::move(token_text)),
      stops_(std::move(stops)),
      emit_(std::move(emit)),
      rows_(size_t(std::max<int64_t>(rows, 0))) {
  DLF_CHECK(rows > 0, "TextStream: ", rows, " rows");
  for (const std::string& stop : stops_)
    DLF_CHECK(!stop.empty(), "a stop string must not be empty");
}

void TextStream::pass_on(int64_t row, size_t bytes) {
  Row& r = rows_[size_t(row)];
  const std::string piece = r.held.substr(0, bytes);
  r.held.erase(0, bytes);
  r.text += piece;
  if (emit_ && !piece.empty()) emit_(row, piece);
}

bool TextStream::add(int64_t row, int64_t token) {
  DLF_CHECK(row >= 0 && row < int64_t(rows_.size()), "TextStream: row ", row, " of ", rows_.size());
  Row& r = rows_[size_t(row)];
  if (r.stopped) return false;
  r.held += token_text_(token);
  size_t first = std::string::npos;  // where the earliest stop string starts
  for (const std::string& stop : stops_) first = std::min(first, r.held.find(stop));
  if (first != std::string::npos) {
    pass_on(row, first);
    r.held.clear();
    r.stopped = true;
    return false;
  }
  // Hold back the longest end of the text that begins some stop string.
  size_t hold = 0;
  for (const std::string& stop : stops_) {
    for (size_t n = std::min(stop.size() - 1, r.held.size()); n > hold; --n) {
      if (r.held.compare(r.held.size() - n, n, stop, 0, n) == 0) {
        hold = n;
        break;
      }
    }
  }
  pass_on(row, r.held.size() - hold);
  return true;
}

void TextStream::finish() {
  for (size_t row = 0; row < rows_.size(); ++row) pass_on(int64_t(row), rows_[row].held.size());
}

}  // namespace dlf::models
