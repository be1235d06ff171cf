// Byte-level text: every byte is a token (vocabulary 256), no tokenizer to train or ship.
#pragma once
#include <string>
#include <vector>

#include <dlf/core/tensor.h>

namespace dlf::nn::data {

/// The text files of Debian's `fortunes` package (/usr/share/games/fortunes), sorted by name:
/// the default corpus of `dlf train`. A dlf::Error says to install the package if it is missing.
std::vector<std::string> default_corpus_paths();

/// The text files `paths` name: each file, and each folder's regular files sorted by name
/// (without fortune's *.dat index files); a dlf::Error names a path that is missing or neither
/// a file nor a folder.
std::vector<std::string> text_files(const std::vector<std::string>& paths);

/// Which part of the text.
enum class Split { train, val };

/// Inputs and next-byte targets, both i64 [batch, seq].
struct TextBatch {
  /// the windows [B, T] and the next bytes [B, T]
  ///@{
  Tensor x, y;
  ///@}
};

/// Byte-level text from files, split into training and validation.
class TextDataset {
 public:
  /// Concatenates the files in order (a folder stands for its regular files, sorted); the last
  /// `val_fraction` of the bytes is the validation split.
  explicit TextDataset(const std::vector<std::string>& paths, double val_fraction = 0.1);

  int64_t size(Split split) const;  ///< bytes in `split`
  /// Random windows whose starts are a function of (seed, step) alone: a run resumed at `step`
  /// draws exactly the batches the uninterrupted run would have.
  TextBatch sample(Split split, int64_t step, int64_t batch, int64_t seq, uint64_t seed) const;
  /// Consecutive windows for evaluation: the `index`-th group of `batch` (wrapping around).
  TextBatch window(Split split, int64_t index, int64_t batch, int64_t seq) const;

  /// Bytes as token ids, i64 [n], and back.
  static Tensor encode(const std::string& text);
  static std::string decode(const Tensor& tokens);  ///< the bytes of `tokens`, as text

 private:
  TextBatch gather(Split split, const std::vector<int64_t>& starts, int64_t seq) const;
  std::string bytes_;
  int64_t train_size_;
};

}  // namespace dlf::nn::data
