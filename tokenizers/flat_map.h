// Open-addressing hash maps for the encoder's hot path: byte strings → values (the vocabulary,
// the piece cache) and token pairs → merges. One probe sequence, no node allocations; a lookup
// of a short string is a hash of at most a few words and one memcmp.
#pragma once
#include <algorithm>
#include <bit>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

namespace dlf::tokenizers::detail {

// A 64-bit hash of bytes, read eight at a time (the pieces a regex makes are a few bytes).
inline uint64_t hash_bytes(std::string_view s) {
  constexpr uint64_t kMul = 0x9e3779b97f4a7c15ull;
  uint64_t h = kMul ^ s.size();
  const char* p = s.data();
  size_t n = s.size();
  for (; n >= 8; p += 8, n -= 8) {
    uint64_t w;
    std::memcpy(&w, p, 8);
    h = (h ^ w) * kMul;
    h ^= h >> 29;
  }
  if (n > 0) {
    uint64_t w = 0;
    std::memcpy(&w, p, n);
    h = (h ^ w) * kMul;
  }
  h ^= h >> 32;
  h *= 0xd6e8feb86659fd93ull;
  return h ^ (h >> 32);
}

// A set of byte strings, each with a value; the keys live in the map's own arena.
template <typename Value>
class StringMap {
 public:
  explicit StringMap(size_t expected = 16) { rehash(std::bit_ceil(expected * 2 + 2)); }

  // The value of `key`, or nullptr.
  const Value* find(std::string_view key) const { return find(key, hash_bytes(key)); }
  // The same, given hash_bytes(key).
  const Value* find(std::string_view key, uint64_t h) const {
    for (size_t i = h & mask_;; i = (i + 1) & mask_) {
      const Slot& s = slots_[i];
      if (s.length == kEmpty) return nullptr;
      if (s.hash == uint32_t(h) && s.length == key.size() &&
          std::memcmp(arena_.data() + s.offset, key.data(), key.size()) == 0)
        return &s.value;
    }
  }

  // Adds `key` with `value`; false (and no change) when the key is there already.
  bool insert(std::string_view key, const Value& value) {
    if ((size_ + 1) * 4 > slots_.size() * 3) rehash(slots_.size() * 2);
    const uint64_t h = hash_bytes(key);
    size_t i = h & mask_;
    for (;; i = (i + 1) & mask_) {
      const Slot& s = slots_[i];
      if (s.length == kEmpty) break;
      if (s.hash == uint32_t(h) && s.length == key.size() &&
          std::memcmp(arena_.data() + s.offset, key.data(), key.size()) == 0)
        return false;
    }
    slots_[i] = Slot{uint32_t(h), uint32_t(key.size()), uint32_t(arena_.size()), value};
    arena_.append(key);
    ++size_;
    return true;
  }

  size_t size() const { return size_; }
  size_t arena_bytes() const { return arena_.size(); }

  // Empties the map and keeps its memory.
  void clear() {
    for (Slot& s : slots_) s.length = kEmpty;
    arena_.clear();
    size_ = 0;
  }

 private:
  static constexpr uint32_t kEmpty = ~0u;
  struct Slot {
    uint32_t hash = 0, length = kEmpty, offset = 0;
    Value value{};
  };

  void rehash(size_t capacity) {
    std::vector<Slot> old = std::move(slots_);
    slots_.assign(capacity, Slot{});
    mask_ = capacity - 1;
    for (const Slot& s : old) {
      if (s.length == kEmpty) continue;
      const std::string_view key(arena_.data() + s.offset, s.length);
      size_t i = hash_bytes(key) & mask_;
      while (slots_[i].length != kEmpty) i = (i + 1) & mask_;
      slots_[i] = s;
    }
  }

  std::vector<Slot> slots_;
  std::string arena_;
  size_t mask_ = 0, size_ = 0;
};

// Token pairs (left, right) → a merge: its priority (lower merges first) and the token it makes.
class PairMap {
 public:
  struct Merge {
    uint32_t priority, result;
  };

  void reserve(size_t n) { rehash(std::bit_ceil(n * 2 + 2)); }

  // The merge of (left, right), or nullptr.
  const Merge* find(uint32_t left, uint32_t right) const {
    const uint64_t key = uint64_t(left) << 32 | right;
    for (size_t i = mix(key) & mask_;; i = (i + 1) & mask_) {
      const Slot& s = slots_[i];
      if (s.key == key) return &s.merge;
      if (s.key == kEmpty) return nullptr;
    }
  }

  // Adds the merge of (left, right) unless the pair has one of higher priority already.
  void insert(uint32_t left, uint32_t right, Merge merge) {
    if ((size_ + 1) * 2 > slots_.size()) rehash(std::max<size_t>(16, slots_.size() * 2));
    const uint64_t key = uint64_t(left) << 32 | right;
    size_t i = mix(key) & mask_;
    for (; slots_[i].key != kEmpty; i = (i + 1) & mask_) {
      if (slots_[i].key != key) continue;
      if (merge.priority < slots_[i].merge.priority) slots_[i].merge = merge;
      return;
    }
    slots_[i] = Slot{key, merge};
    ++size_;
  }

  size_t size() const { return size_; }

 private:
  static constexpr uint64_t kEmpty = ~0ull;  // no pair: ids are below 2^32 - 1
  struct Slot {
    uint64_t key = kEmpty;
    Merge merge{};
  };
  static uint64_t mix(uint64_t k) {
    k ^= k >> 33;
    k *= 0xff51afd7ed558ccdull;
    return k ^ (k >> 33);
  }
  void rehash(size_t capacity) {
    std::vector<Slot> old = std::move(slots_);
    slots_.assign(capacity, Slot{});
    mask_ = capacity - 1;
    for (const Slot& s : old) {
      if (s.key == kEmpty) continue;
      size_t i = mix(s.key) & mask_;
      while (slots_[i].key != kEmpty) i = (i + 1) & mask_;
      slots_[i] = s;
    }
  }

  std::vector<Slot> slots_ = std::vector<Slot>(16);
  size_t mask_ = 15, size_ = 0;
};

}  // namespace dlf::tokenizers::detail
