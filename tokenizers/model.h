// What a tokenizer is once its files are read (Definition) and its tables built for encoding
// (Model): the vocabulary, the merges as a table keyed by token pairs, the compiled regex.
#pragma once
#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <dlf/tokenizers/tokenizer.h>

#include "flat_map.h"
#include "pretokenizer.h"

namespace dlf::tokenizers::detail {

// A tokenizer as its files describe it.
struct Definition {
  // How two adjacent tokens merge.
  enum class Rule {
    by_rank,  // tiktoken: any two whose bytes together are a token; the lower id first
    listed    // GPT-2's vocab.bpe, Hugging Face: the listed pairs, in the order of the list
  };

  std::string source;               // where it came from (not part of the hash)
  std::string pattern;              // the pre-tokenisation regex
  std::vector<std::string> tokens;  // id → bytes; empty where no ordinary token has that id
  Rule rule = Rule::by_rank;
  std::vector<std::pair<uint32_t, uint32_t>> merges;  // Rule::listed: (left, right) ids
  // A piece that is a token is that token, merges or not (tiktoken; Hugging Face's
  // ignore_merges). Without it a piece is always merged from its bytes.
  bool whole_piece_first = true;
  std::vector<SpecialToken> specials;
};

// The memory one thread's merging reuses from piece to piece.
struct MergeScratch {
  struct Candidate {  // a pair that may merge: left part at `pos`, both parts' ids then
    uint32_t priority, pos, left, right, result;
  };
  std::vector<uint32_t> ids, next, prev;  // parts, by their first byte
  std::vector<Candidate> heap;
};

class Model {
 public:
  // Checks the definition (every byte a token, no token twice, merges that make tokens) and
  // builds the tables; a dlf::Error names the source and what is wrong.
  explicit Model(Definition definition);

  const Definition& definition() const { return def_; }
  const Pattern& pattern() const { return pattern_; }

  // The token a whole piece is, when pieces are looked up whole first; else nullptr. `hash` is
  // hash_bytes(piece).
  const uint32_t* whole_piece(std::string_view piece, uint64_t hash) const {
    return def_.whole_piece_first ? whole_.find(piece, hash) : nullptr;
  }
  // Appends the ids BPE makes of `piece` (its bytes merged, lowest priority first, leftmost
  // first among equals): O(n log n) in the piece's bytes.
  void merge(std::string_view piece, std::vector<uint32_t>& ids, MergeScratch& scratch) const;

  // The bytes of token `id` (a special token's text); a dlf::Error if `id` is no token.
  std::string_view bytes_of(uint32_t id) const;
  uint32_t vocab_size() const { return uint32_t(offsets_.size() - 1); }
  uint64_t hash() const { return hash_; }

 private:
  Definition def_;
  Pattern pattern_;
  StringMap<uint32_t> whole_;  // ordinary tokens' bytes → id
  PairMap pairs_;              // (left, right) → priority, result
  std::array<uint32_t, 256> byte_ids_{};
  std::string bytes_;              // every id's bytes back to back (special tokens' texts too)
  std::vector<uint32_t> offsets_;  // id → its bytes in bytes_, to offsets_[id + 1]
  std::vector<bool> is_token_;     // false for ids no token has
  uint64_t hash_ = 0;
};

}  // namespace dlf::tokenizers::detail
