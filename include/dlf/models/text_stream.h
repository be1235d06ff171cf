// Generated tokens as text while they come, with stop strings (Hugging Face's stop_strings,
// llama.cpp's antiprompts): what could still be the start of a stop string waits until it is
// known not to be one, and a row ends at its first stop string, which is not passed on.
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace dlf::models {

/// Each row's text as its tokens arrive (feed it from GenerateOptions::on_token).
class TextStream {
 public:
  /// The bytes of a token ("" for one that prints nothing, an end-of-text token).
  using TokenText = std::function<std::string(int64_t token)>;
  /// Receives each piece of a row's text once it is final.
  using Emit = std::function<void(int64_t row, std::string_view text)>;

  /// `rows` rows ending at any of `stops` (empty strings are refused).
  TextStream(int64_t rows, TokenText token_text, std::vector<std::string> stops, Emit emit = {});

  /// Adds `row`'s next token; false once the row has met a stop string (it takes no more).
  bool add(int64_t row, int64_t token);
  /// Passes on what the rows still hold back (at the end of generation).
  void finish();
  /// What `row` has passed on so far.
  const std::string& text(int64_t row) const { return rows_.at(size_t(row)).text; }

 private:
  struct Row {
    std::string text, held;  // passed on; held back as a possible start of a stop string
    bool stopped = false;
  };
  void pass_on(int64_t row, size_t bytes);
  TokenText token_text_;
  std::vector<std::string> stops_;
  Emit emit_;
  std::vector<Row> rows_;
};

}  // namespace dlf::models
