// Training a byte-level BPE on a corpus, as GPT-2's and Hugging Face's trainers do: the text
// cut into pieces by the regex, then the most frequent pair of adjacent tokens merged, again and
// again, until the vocabulary is full.
#pragma once
#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <dlf/tokenizers/tokenizer.h>

namespace dlf::tokenizers {

namespace detail {
class TrainerState;
}  // namespace detail

/// What a BpeTrainer makes.
struct TrainOptions {
  /// Tokens in all: the 256 bytes, the merges and the special tokens.
  uint32_t vocab_size = 8192;
  /// The pre-tokenisation regex: the name of a known encoding's (gpt2, cl100k_base, o200k_base,
  /// ...) or a regex.
  std::string pattern = "gpt2";
  /// Special tokens, given the last ids.
  std::vector<std::string> special_tokens = {"<|endoftext|>"};
  /// A pair seen fewer times than this is never merged (training stops short of vocab_size
  /// when no pair is left that often).
  uint64_t min_frequency = 2;
};

/// Trains a byte-level BPE. Deterministic: the same texts (in any order) and options give the
/// same tokenizer, byte for byte. Ids 0-255 are the bytes, then one id per merge in the order
/// learnt, then the special tokens. Each step merges the pair of adjacent tokens that occurs most
/// often within the pieces (a piece counted as often as it occurs); ties go to the smaller
/// (left, right) pair of ids.
class BpeTrainer {
 public:
  /// A trainer that has seen no text; a dlf::Error for options that cannot make a tokenizer.
  explicit BpeTrainer(TrainOptions options = {});
  ~BpeTrainer();
  BpeTrainer(BpeTrainer&&) noexcept;             ///< moves what was counted
  BpeTrainer& operator=(BpeTrainer&&) noexcept;  ///< moves what was counted

  /// Counts the pieces of `text`.
  void add_text(std::string_view text);
  /// Counts the pieces of a file's bytes.
  void add_file(const std::filesystem::path& path);
  /// Distinct pieces counted so far.
  size_t distinct_pieces() const;

  /// Learns the merges from what was counted.
  Tokenizer train() const;

 private:
  TrainOptions options_;
  std::unique_ptr<detail::TrainerState> state_;
};

/// What train_files() made, and of how much text.
struct FilesTraining {
  Tokenizer tokenizer;         ///< the trained tokenizer
  uint64_t bytes = 0;          ///< of the files read
  size_t distinct_pieces = 0;  ///< counted in them
};

/// A BpeTrainer of `options` trained on the text files `files`; a dlf::Error names one that is a
/// directory.
FilesTraining train_files(const TrainOptions& options, const std::vector<std::string>& files);

}  // namespace dlf::tokenizers
