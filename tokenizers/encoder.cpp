// Encoding on one thread: special tokens found first, the text between them cut by the regex,
// each piece a whole token, a piece met before (cached), or merged from its bytes.
#include <algorithm>
#include <cstring>
#include <iterator>

#include <dlf/tokenizers/tokenizer.h>

#include "model.h"

namespace dlf::tokenizers {
namespace detail {

class EncoderState {
 public:
  explicit EncoderState(std::shared_ptr<const Model> model)
      : model_(std::move(model)), splitter_(model_->pattern()), cache_(kMaxCached) {}

  void encode(std::string_view text, std::vector<uint32_t>& ids, Specials specials) {
    const std::vector<SpecialToken>& all = model_->definition().specials;
    if (specials == Specials::as_text || all.empty()) return encode_ordinary(text, ids);
    // Each special token's next occurrence, searched again only once passed.
    constexpr size_t kNone = std::string_view::npos;
    next_.resize(all.size());
    for (size_t k = 0; k < all.size(); ++k) next_[k] = text.find(all[k].text);
    for (size_t pos = 0;;) {
      size_t which = kNone;
      for (size_t k = 0; k < all.size(); ++k) {
        if (next_[k] < pos) next_[k] = text.find(all[k].text, pos);
        if (next_[k] == kNone) continue;
        // The first occurrence wins, the longest among those at one place.
        if (which == kNone || next_[k] < next_[which] ||
            (next_[k] == next_[which] && all[k].text.size() > all[which].text.size()))
          which = k;
      }
      if (which == kNone) return encode_ordinary(text.substr(pos), ids);
      encode_ordinary(text.substr(pos, next_[which] - pos), ids);
      ids.push_back(all[which].id);
      pos = next_[which] + all[which].text.size();
    }
  }

 private:
  // Pieces longer than this are merged each time (they are rare, and would crowd the cache).
  static constexpr size_t kMaxCachedPiece = 64;
  // The cache starts again when it holds this many pieces.
  static constexpr size_t kMaxCached = 1 << 16;
  // The hot pieces: one slot per hash, kept small enough for the CPU's caches, where the
  // vocabulary's and the cache's tables (megabytes) cost a cache miss or two a lookup.
  static constexpr size_t kHotPieces = 16384;
  struct HotPiece {
    char bytes[16];
    uint8_t length = 0;  // 0: empty (no piece is)
    uint8_t count = 0;
    uint32_t ids[3];
  };

  void encode_ordinary(std::string_view text, std::vector<uint32_t>& ids) {
    splitter_.reset(text);
    for (std::string_view piece; splitter_.next(piece);) {
      const uint64_t hash = hash_bytes(piece);
      HotPiece& hot = hot_[hash & (kHotPieces - 1)];
      if (hot.length == piece.size() && std::memcmp(hot.bytes, piece.data(), piece.size()) == 0) {
        ids.insert(ids.end(), hot.ids, hot.ids + hot.count);
        continue;
      }
      const size_t before = ids.size();
      encode_piece(piece, hash, ids);
      const size_t made = ids.size() - before;
      if (piece.size() <= sizeof hot.bytes && made <= std::size(hot.ids)) {
        hot.length = uint8_t(piece.size());
        std::memcpy(hot.bytes, piece.data(), piece.size());
        hot.count = uint8_t(made);
        std::copy(ids.begin() + std::ptrdiff_t(before), ids.end(), hot.ids);
      }
    }
  }

  // A piece not among the hot ones: a whole token, a cached piece, or merged (and cached).
  void encode_piece(std::string_view piece, uint64_t hash, std::vector<uint32_t>& ids) {
    if (const uint32_t* id = model_->whole_piece(piece, hash)) {
      ids.push_back(*id);
      return;
    }
    if (piece.size() > kMaxCachedPiece) {
      model_->merge(piece, ids, scratch_);
      return;
    }
    if (const uint64_t* span = cache_.find(piece, hash)) {
      const auto first = cached_ids_.begin() + std::ptrdiff_t(*span >> 32);
      ids.insert(ids.end(), first, first + std::ptrdiff_t(*span & 0xffffffffu));
      return;
    }
    const size_t before = ids.size();
    model_->merge(piece, ids, scratch_);
    if (cache_.size() >= kMaxCached) {
      cache_.clear();
      cached_ids_.clear();
    }
    cache_.insert(piece, uint64_t(cached_ids_.size()) << 32 | (ids.size() - before));
    cached_ids_.insert(cached_ids_.end(), ids.begin() + std::ptrdiff_t(before), ids.end());
  }

  std::shared_ptr<const Model> model_;
  Splitter splitter_;
  MergeScratch scratch_;
  StringMap<uint64_t> cache_;  // piece → where its ids are in cached_ids_, and how many
  std::vector<uint32_t> cached_ids_;
  std::vector<HotPiece> hot_ = std::vector<HotPiece>(kHotPieces);
  std::vector<size_t> next_;
};

}  // namespace detail

Encoder::Encoder(const Tokenizer& tokenizer)
    : state_(std::make_unique<detail::EncoderState>(tokenizer.model_)) {}
Encoder::~Encoder() = default;
Encoder::Encoder(Encoder&&) noexcept = default;
Encoder& Encoder::operator=(Encoder&&) noexcept = default;

void Encoder::encode(std::string_view text, std::vector<uint32_t>& ids, Specials specials) {
  state_->encode(text, ids, specials);
}

}  // namespace dlf::tokenizers
