// Training windows from a folder of token shards: a seeded permutation of the windows each
// epoch, every data-parallel replica reading only its own rows.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include <dlf/nn/data/text_dataset.h>
#include <dlf/nn/data/token_shard.h>

namespace dlf::nn::data {

/// Where a stream stands: the epoch, and the windows of that epoch already taken.
struct StreamPosition {
  int64_t epoch = 0;  ///< full passes over the training windows before this one
  int64_t index = 0;  ///< windows of this epoch taken
  bool operator==(const StreamPosition&) const = default;  ///< both equal
};

/// The bijection of [0, n) the permutation of `seed` and `epoch` makes: a Feistel network over
/// the next even power of two, walked until it lands below n. Needs no memory, so a corpus of
/// any size is shuffled whole.
int64_t permuted_index(int64_t index, int64_t n, uint64_t seed, int64_t epoch);

/// A folder of token shards (`*.tok`, sorted by name), memory-mapped. The last `val_fraction`
/// of each shard's ids is held out. Training windows are `seq + 1` ids at starts 0, seq, 2 seq,
/// ... of each shard's training part (consecutive windows share one id, as a target then an
/// input), taken in a new seeded order each epoch.
class TokenShards {
 public:
  /// Opens every shard of `folder`; a dlf::Error if there is none, if one is malformed
  /// (TokenShard), or if two were made by different tokenizers.
  explicit TokenShards(const std::string& folder, double val_fraction = 0.1);

  /// Whether `folder` is a folder holding token shards.
  static bool is_shard_folder(const std::string& folder);

  uint64_t tokenizer_hash() const;  ///< the shards' tokenizer's (0: bytes)
  uint32_t vocab() const;           ///< one past the largest id the shards may hold
  int64_t size(Split split) const;  ///< ids in `split`
  /// Training windows of `seq` + 1 ids an epoch holds.
  int64_t windows(int64_t seq) const;

  /// Where training batch `step` of `batch` windows starts: a function of (step, batch, seq)
  /// alone, so that a resumed run goes on from the step its checkpoint records.
  StreamPosition position(int64_t step, int64_t batch, int64_t seq) const;
  /// Rows [row0, row0 + rows) of training batch `step` (`batch` windows of `seq` + 1 ids in
  /// the order of `seed`): each data-parallel replica reads only its own rows, and the
  /// replicas' rows of an epoch are disjoint windows.
  TextBatch sample(int64_t step, int64_t batch, int64_t seq, uint64_t seed, int64_t row0,
                   int64_t rows) const;
  /// Consecutive held-out windows: rows [row0, row0 + rows) of the `index`-th group of `batch`
  /// (wrapping around).
  TextBatch window(int64_t index, int64_t batch, int64_t seq, int64_t row0, int64_t rows) const;

 private:
  // A window's ids: `seq` + 1 from `start` of shard `shard`.
  struct Window {
    size_t shard;
    int64_t start;
  };
  Window train_window(int64_t w, int64_t seq) const;
  Window val_window(int64_t w, int64_t seq) const;
  TextBatch gather(const std::vector<Window>& windows, int64_t seq) const;

  std::vector<TokenShard> shards_;
  std::vector<int64_t> train_size_;  // each shard's training ids
};

}  // namespace dlf::nn::data
