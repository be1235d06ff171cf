// Writing a corpus as token shards (`dlf tokenize`): text files encoded on several threads,
// one shard a file, so that `dlf train --data SHARDS/` streams them (nn/data/token_stream.h).
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace dlf::train {

/// How far tokenizing got.
struct TokenizeProgress {
  /// shards written, of how many
  ///@{
  int64_t files_done = 0, files = 0;
  ///@}
  /// text encoded, of how much (bytes)
  ///@{
  int64_t bytes_done = 0, bytes = 0;
  ///@}
  int64_t tokens = 0;  ///< ids written
};

/// What to tokenize, with what, and where to.
struct TokenizeOptions {
  std::vector<std::string> data = {};  ///< text files or folders; empty: the default corpus
  std::string out = {};                ///< the folder of the shards (made if missing)
  std::string tokenizer = {};  ///< a name or path (tokenizers::Tokenizer::load); empty: bytes
  int threads = 0;             ///< encoding threads; 0: the machine's cores
  /// Called on the calling thread about twice a second while the threads work, and once at the
  /// end; may be empty.
  std::function<void(const TokenizeProgress&)> progress = {};
};

/// What was written.
struct TokenizeSummary {
  TokenizeProgress totals;     ///< the files, bytes and ids
  std::string tokenizer_hash;  ///< 16 hex digits; "0000000000000000" for bytes
  double seconds = 0;          ///< the wall time
};

/// Encodes each text file (a folder: its files, sorted) into shard `NNNNN.tok` of `out`, in the
/// files' order: bytes as ids 0..255 without a tokenizer; with one, the ids of its encoder (its
/// special tokens' text as plain text) after its end-of-text id, which separates documents.
/// Files are read in pieces cut at line ends, so memory stays small whatever their size. A
/// dlf::Error if `out` holds shards already or a file cannot be read.
TokenizeSummary tokenize_corpus(const TokenizeOptions& options);

/// "tokenize: 3/43 files, 1.2/2.6 MB, 1200000 tokens": a progress line, as dlf tokenize prints.
std::string describe(const TokenizeProgress& progress);
/// "OUT: 43 shards, 2576674 tokens of 2.6 MB of text (tokenizer bytes, hash ...) in 0.1 s,
/// 35.5 MB/s": what `options` made, as dlf tokenize prints.
std::string describe(const TokenizeSummary& summary, const TokenizeOptions& options);

}  // namespace dlf::train
