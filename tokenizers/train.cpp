// BPE training over counted pieces: pair counts kept up to date by the changes each merge makes
// (not recounted), a max-heap of pairs with stale entries skipped, and per pair the pieces it
// occurs in, so that a merge visits only those.
#include <dlf/tokenizers/train.h>

#include <algorithm>
#include <set>
#include <unordered_map>

#include <dlf/error.h>

#include "encodings.h"
#include "files.h"
#include "model.h"

namespace dlf::tokenizers {
namespace detail {
namespace {

struct Piece {
  std::vector<uint32_t> tokens;
  uint64_t count;
};

uint64_t pair_key(uint32_t left, uint32_t right) { return uint64_t(left) << 32 | right; }

struct TransparentHash {
  using is_transparent = void;
  size_t operator()(std::string_view s) const { return hash_bytes(s); }
};

}  // namespace

class TrainerState {
 public:
  explicit TrainerState(const std::string& pattern) : pattern_(pattern), splitter_(pattern_) {}

  void count(std::string_view text) {
    splitter_.reset(text);
    std::string_view piece;
    while (splitter_.next(piece)) {
      auto it = counts_.find(piece);
      if (it == counts_.end()) it = counts_.emplace(std::string(piece), 0).first;
      ++it->second;
    }
  }
  size_t distinct() const { return counts_.size(); }

  Definition train(const TrainOptions& options, const std::string& pattern) const;

 private:
  Pattern pattern_;
  Splitter splitter_;
  std::unordered_map<std::string, uint64_t, TransparentHash, std::equal_to<>> counts_;
};

Definition TrainerState::train(const TrainOptions& options, const std::string& pattern) const {
  // The pieces in byte order, so that nothing depends on the order texts came in.
  std::vector<std::pair<std::string_view, uint64_t>> sorted(counts_.begin(), counts_.end());
  std::sort(sorted.begin(), sorted.end());
  std::vector<Piece> pieces;
  pieces.reserve(sorted.size());
  for (const auto& [bytes, count] : sorted) {
    Piece p{std::vector<uint32_t>(bytes.size()), count};
    for (size_t i = 0; i < bytes.size(); ++i) p.tokens[i] = static_cast<unsigned char>(bytes[i]);
    pieces.push_back(std::move(p));
  }

  Definition d;
  d.source = "trained";
  d.pattern = pattern;
  d.rule = Definition::Rule::listed;
  d.whole_piece_first = false;
  StringMap<uint32_t> ids;
  for (int b = 0; b < 256; ++b) {
    d.tokens.emplace_back(1, char(b));
    ids.insert(d.tokens.back(), uint32_t(b));
  }

  std::unordered_map<uint64_t, int64_t> pair_count;
  std::unordered_map<uint64_t, std::vector<uint32_t>> pair_pieces;  // may list a piece twice
  for (uint32_t w = 0; w < pieces.size(); ++w) {
    const std::vector<uint32_t>& t = pieces[w].tokens;
    for (size_t i = 0; i + 1 < t.size(); ++i) {
      const uint64_t key = pair_key(t[i], t[i + 1]);
      pair_count[key] += int64_t(pieces[w].count);
      pair_pieces[key].push_back(w);
    }
  }
  // Most frequent first; among equals, the smaller pair of ids.
  using Entry = std::pair<int64_t, uint64_t>;
  const auto below = [](const Entry& a, const Entry& b) {
    return a.first != b.first ? a.first < b.first : a.second > b.second;
  };
  std::vector<Entry> heap;
  for (const auto& [key, count] : pair_count) heap.emplace_back(count, key);
  std::make_heap(heap.begin(), heap.end(), below);

  const size_t target = options.vocab_size - options.special_tokens.size();
  std::vector<uint32_t> visited(pieces.size(), ~0u);  // the merge that last rewrote a piece
  std::vector<uint64_t> changed;
  std::vector<uint32_t> rewritten;
  while (d.tokens.size() < target && !heap.empty()) {
    std::pop_heap(heap.begin(), heap.end(), below);
    const auto [count, key] = heap.back();
    heap.pop_back();
    const auto current = pair_count.find(key);
    if (current == pair_count.end() || current->second != count) continue;  // stale
    if (uint64_t(count) < options.min_frequency) break;
    const auto left = uint32_t(key >> 32), right = uint32_t(key);
    const std::string bytes = d.tokens[left] + d.tokens[right];
    if (ids.insert(bytes, uint32_t(d.tokens.size()))) d.tokens.push_back(bytes);
    const uint32_t made = *ids.find(bytes);
    const auto merge = uint32_t(d.merges.size());
    d.merges.emplace_back(left, right);

    changed.clear();
    const auto add = [&](uint32_t a, uint32_t b, int64_t delta, uint32_t w) {
      const uint64_t k = pair_key(a, b);
      pair_count[k] += delta;
      changed.push_back(k);
      if (delta > 0) {
        std::vector<uint32_t>& list = pair_pieces[k];
        if (list.empty() || list.back() != w) list.push_back(w);
      }
    };
    const std::vector<uint32_t> where = std::move(pair_pieces[key]);
    pair_pieces.erase(key);
    for (const uint32_t w : where) {
      if (visited[w] == merge) continue;
      visited[w] = merge;
      const std::vector<uint32_t>& t = pieces[w].tokens;
      const auto c = int64_t(pieces[w].count);
      rewritten.clear();
      // Left to right, without overlaps; a pair's neighbours are the rewritten token on its left
      // and the original one on its right.
      for (size_t i = 0; i < t.size();) {
        if (i + 1 < t.size() && t[i] == left && t[i + 1] == right) {
          if (!rewritten.empty()) {
            add(rewritten.back(), left, -c, w);
            add(rewritten.back(), made, c, w);
          }
          if (i + 2 < t.size()) {
            add(right, t[i + 2], -c, w);
            add(made, t[i + 2], c, w);
          }
          pair_count[key] -= c;
          rewritten.push_back(made);
          i += 2;
        } else {
          rewritten.push_back(t[i++]);
        }
      }
      pieces[w].tokens.assign(rewritten.begin(), rewritten.end());
    }
    pair_count.erase(key);
    std::sort(changed.begin(), changed.end());
    changed.erase(std::unique(changed.begin(), changed.end()), changed.end());
    for (const uint64_t k : changed) {
      const auto it = pair_count.find(k);
      if (it == pair_count.end() || it->second <= 0) {
        if (it != pair_count.end()) pair_count.erase(it);
        continue;
      }
      heap.emplace_back(it->second, k);
      std::push_heap(heap.begin(), heap.end(), below);
    }
  }
  for (const std::string& s : options.special_tokens)
    d.specials.push_back({s, uint32_t(d.tokens.size() + d.specials.size())});
  return d;
}

}  // namespace detail

namespace {

std::string regex_of(const std::string& pattern) {
  const detail::Encoding* known = detail::find_encoding(pattern);
  return known != nullptr ? std::string(known->pattern) : pattern;
}

}  // namespace

BpeTrainer::BpeTrainer(TrainOptions options) : options_(std::move(options)) {
  DLF_CHECK(!options_.pattern.empty(), "BPE training: the regex is empty");
  std::set<std::string> specials;
  for (const std::string& s : options_.special_tokens) {
    DLF_CHECK(!s.empty(), "BPE training: a special token is empty");
    DLF_CHECK(specials.insert(s).second, "BPE training: special token ", s, " is given twice");
  }
  DLF_CHECK(options_.vocab_size >= 256 + specials.size(), "BPE training: a vocabulary of ",
            options_.vocab_size, " has no room for the 256 bytes and ", specials.size(),
            " special tokens (at least ", 256 + specials.size(), ")");
  state_ = std::make_unique<detail::TrainerState>(regex_of(options_.pattern));
}

BpeTrainer::~BpeTrainer() = default;
BpeTrainer::BpeTrainer(BpeTrainer&&) noexcept = default;
BpeTrainer& BpeTrainer::operator=(BpeTrainer&&) noexcept = default;

void BpeTrainer::add_text(std::string_view text) { state_->count(text); }

void BpeTrainer::add_file(const std::filesystem::path& path) {
  state_->count(detail::read_file(path));
}

size_t BpeTrainer::distinct_pieces() const { return state_->distinct(); }

Tokenizer BpeTrainer::train() const {
  return Tokenizer(
      std::make_shared<const detail::Model>(state_->train(options_, regex_of(options_.pattern))));
}

FilesTraining train_files(const TrainOptions& options, const std::vector<std::string>& files) {
  BpeTrainer trainer(options);
  uint64_t bytes = 0;
  for (const std::string& file : files) {
    DLF_CHECK(!std::filesystem::is_directory(file), "--data ", file,
              " is a directory: pass its text files");
    bytes += std::filesystem::file_size(file);
    trainer.add_file(file);
  }
  return {trainer.train(), bytes, trainer.distinct_pieces()};
}

}  // namespace dlf::tokenizers
