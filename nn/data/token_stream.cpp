#include <dlf/core/random.h>
#include <dlf/nn/data/token_stream.h>

#include <algorithm>
#include <bit>
#include <utility>

namespace dlf::nn::data {
namespace fs = std::filesystem;

namespace {

std::vector<fs::path> shard_files(const fs::path& folder) {
  std::vector<fs::path> files;
  if (!fs::is_directory(folder)) return files;
  for (const auto& entry : fs::directory_iterator(folder))
    if (entry.is_regular_file() && entry.path().extension() == kShardExtension)
      files.push_back(entry.path());
  std::sort(files.begin(), files.end());
  return files;
}

// Windows of seq + 1 ids at a stride of seq in `ids` ids.
int64_t windows_in(int64_t ids, int64_t seq) { return ids > seq ? (ids - 1) / seq : 0; }

}  // namespace

int64_t permuted_index(int64_t index, int64_t n, uint64_t seed, int64_t epoch) {
  DLF_CHECK(index >= 0 && index < n, "permuted_index: ", index, " is not in [0, ", n, ")");
  const int half = std::max(1, (int(std::bit_width(uint64_t(n - 1))) + 1) / 2);
  const uint64_t mask = (uint64_t(1) << half) - 1;
  const uint64_t key = seed ^ (uint64_t(epoch) * 0x9E3779B97F4A7C15ull);
  auto x = uint64_t(index);
  do {
    uint64_t left = x >> half, right = x & mask;
    for (uint64_t round = 0; round < 4; ++round) {
      const auto f = philox(key, (round << 40) ^ right);
      const uint64_t mixed = ((uint64_t(f[0]) << 32) | f[1]) & mask;
      left = std::exchange(right, left ^ mixed);
    }
    x = (left << half) | right;
  } while (x >= uint64_t(n));  // cycle-walking: at most 4 n values of the square domain
  return int64_t(x);
}

bool TokenShards::is_shard_folder(const std::string& folder) {
  return !shard_files(folder).empty();
}

TokenShards::TokenShards(const std::string& folder, double val_fraction) {
  DLF_CHECK(val_fraction > 0 && val_fraction < 1,
            "TokenShards: val_fraction must be in (0, 1), got ", val_fraction);
  for (const fs::path& file : shard_files(folder)) {
    shards_.emplace_back(file);
    const ShardHeader& first = shards_.front().header();
    const ShardHeader& h = shards_.back().header();
    DLF_CHECK(h.tokenizer_hash == first.tokenizer_hash, "token shards ",
              shards_.front().path().string(), " and ", file.string(),
              " were made by different tokenizers (hashes ", first.tokenizer_hash, " and ",
              h.tokenizer_hash, "): a folder holds one tokenizer's shards");
    train_size_.push_back(int64_t(double(h.count) * (1 - val_fraction)));
  }
  DLF_CHECK(!shards_.empty(), "no token shards (*", kShardExtension, ") in ", folder,
            ": dlf tokenize --data TEXT --out ", folder, " writes them");
}

uint64_t TokenShards::tokenizer_hash() const { return shards_.front().header().tokenizer_hash; }

uint32_t TokenShards::vocab() const {
  uint32_t vocab = 0;
  for (const TokenShard& s : shards_) vocab = std::max(vocab, s.header().vocab);
  return vocab;
}

int64_t TokenShards::size(Split split) const {
  int64_t n = 0;
  for (size_t s = 0; s < shards_.size(); ++s)
    n += split == Split::train ? train_size_[s] : shards_[s].size() - train_size_[s];
  return n;
}

int64_t TokenShards::windows(int64_t seq) const {
  int64_t n = 0;
  for (int64_t ids : train_size_) n += windows_in(ids, seq);
  return n;
}

TokenShards::Window TokenShards::train_window(int64_t w, int64_t seq) const {
  for (size_t s = 0;; ++s) {
    const int64_t here = windows_in(train_size_[s], seq);
    if (w < here) return {s, w * seq};
    w -= here;
  }
}

TokenShards::Window TokenShards::val_window(int64_t w, int64_t seq) const {
  for (size_t s = 0;; ++s) {
    const int64_t here = windows_in(shards_[s].size() - train_size_[s], seq);
    if (w < here) return {s, train_size_[s] + w * seq};
    w -= here;
  }
}

StreamPosition TokenShards::position(int64_t step, int64_t batch, int64_t seq) const {
  const int64_t n = windows(seq);
  DLF_CHECK(n > 0, "the token shards' training part (", size(Split::train),
            " ids) is too short for one window of ", seq, " + 1 ids");
  return {.epoch = step * batch / n, .index = step * batch % n};
}

TextBatch TokenShards::sample(int64_t step, int64_t batch, int64_t seq, uint64_t seed, int64_t row0,
                              int64_t rows) const {
  DLF_CHECK(batch > 0 && seq > 0 && row0 >= 0 && rows > 0 && row0 + rows <= batch,
            "TokenShards: rows [", row0, ", ", row0 + rows, ") of a batch of ", batch);
  const int64_t n = windows(seq);
  const StreamPosition at = position(step, batch, seq);
  std::vector<Window> mine;
  for (int64_t r = row0; r < row0 + rows; ++r) {
    const int64_t epoch = at.epoch + (at.index + r) / n;
    mine.push_back(train_window(permuted_index((at.index + r) % n, n, seed, epoch), seq));
  }
  return gather(mine, seq);
}

TextBatch TokenShards::window(int64_t index, int64_t batch, int64_t seq, int64_t row0,
                              int64_t rows) const {
  int64_t n = 0;
  for (size_t s = 0; s < shards_.size(); ++s)
    n += windows_in(shards_[s].size() - train_size_[s], seq);
  DLF_CHECK(n > 0, "the token shards' validation part (", size(Split::val),
            " ids) is too short for one window of ", seq, " + 1 ids");
  std::vector<Window> mine;
  for (int64_t r = row0; r < row0 + rows; ++r)
    mine.push_back(val_window((index * batch + r) % n, seq));
  return gather(mine, seq);
}

TextBatch TokenShards::gather(const std::vector<Window>& windows, int64_t seq) const {
  const auto rows = int64_t(windows.size());
  TextBatch b{Tensor::empty({rows, seq}, DType::i64, kCPU),
              Tensor::empty({rows, seq}, DType::i64, kCPU)};
  std::vector<int64_t> ids(size_t(seq) + 1);
  for (int64_t r = 0; r < rows; ++r) {
    shards_[windows[size_t(r)].shard].read(windows[size_t(r)].start, seq + 1, ids.data());
    std::copy(ids.begin(), ids.end() - 1, b.x.data<int64_t>() + r * seq);
    std::copy(ids.begin() + 1, ids.end(), b.y.data<int64_t>() + r * seq);
  }
  return b;
}

}  // namespace dlf::nn::data
