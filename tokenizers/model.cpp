#include "model.h"

#include <algorithm>
#include <cstdio>

#include <dlf/core/checksum.h>
#include <dlf/error.h>

namespace dlf::tokenizers::detail {
namespace {

constexpr uint32_t kNone = ~0u;

std::string printable(std::string_view bytes) {
  std::string out;
  for (const char c : bytes) {
    const auto b = static_cast<unsigned char>(c);
    if (b >= 0x20 && b < 0x7f) {
      out += c;
    } else {
      char hex[8];
      std::snprintf(hex, sizeof hex, "\\x%02x", b);
      out += hex;
    }
  }
  return '"' + out + '"';
}

void put_u32(std::string& out, uint64_t v) {
  for (int i = 0; i < 4; ++i) out += char(v >> (8 * i) & 0xff);
}
void put_bytes(std::string& out, std::string_view s) {
  put_u32(out, s.size());
  out += s;
}

// What decides the ids, written out in one canonical order: the hash's input.
std::string canonical(const Definition& d) {
  std::string out = "dlf tokenizer 1";
  put_bytes(out, d.pattern);
  put_u32(out, d.rule == Definition::Rule::by_rank ? 0 : 1);
  put_u32(out, d.whole_piece_first ? 1 : 0);
  put_u32(out, d.tokens.size());
  for (const std::string& t : d.tokens) put_bytes(out, t);
  put_u32(out, d.merges.size());
  for (const auto& [left, right] : d.merges) {
    put_u32(out, left);
    put_u32(out, right);
  }
  put_u32(out, d.specials.size());
  for (const SpecialToken& s : d.specials) {
    put_u32(out, s.id);
    put_bytes(out, s.text);
  }
  return out;
}

}  // namespace

Model::Model(Definition definition)
    : def_(std::move(definition)), pattern_(def_.pattern), whole_(def_.tokens.size()) {
  const std::string& src = def_.source;
  DLF_CHECK(def_.tokens.size() < kNone, "tokenizer ", src, ": too many tokens");
  for (uint32_t id = 0; id < def_.tokens.size(); ++id) {
    const std::string& t = def_.tokens[id];
    if (t.empty()) continue;
    DLF_CHECK(whole_.insert(t, id), "tokenizer ", src, ": token ", printable(t),
              " appears twice (id ", id, " and id ", *whole_.find(t), ")");
  }
  for (int b = 0; b < 256; ++b) {
    const uint32_t* id = whole_.find(std::string(1, char(b)));
    DLF_CHECK(id != nullptr, "tokenizer ", src, ": no token for the byte ",
              printable(std::string(1, char(b))),
              ": not a byte-level BPE (every byte must be a token)");
    byte_ids_[b] = *id;
  }

  if (def_.rule == Definition::Rule::listed) {
    pairs_.reserve(def_.merges.size());
    for (uint32_t i = 0; i < def_.merges.size(); ++i) {
      const auto [left, right] = def_.merges[i];
      DLF_CHECK(left < def_.tokens.size() && right < def_.tokens.size() &&
                    !def_.tokens[left].empty() && !def_.tokens[right].empty(),
                "tokenizer ", src, ": merge ", i, " joins ids ", left, " and ", right,
                ", which are not both tokens");
      const std::string joined = def_.tokens[left] + def_.tokens[right];
      const uint32_t* result = whole_.find(joined);
      DLF_CHECK(result != nullptr, "tokenizer ", src, ": merge ", i, " makes ", printable(joined),
                ", which is not a token");
      pairs_.insert(left, right, {i, *result});
    }
  } else {
    // tiktoken merges two parts whenever their bytes together are a token: every split of a
    // token into two tokens is a pair that makes it, at the token's rank.
    for (uint32_t id = 0; id < def_.tokens.size(); ++id) {
      const std::string_view t = def_.tokens[id];
      for (size_t k = 1; k < t.size(); ++k) {
        const uint32_t* left = whole_.find(t.substr(0, k));
        if (left == nullptr) continue;
        const uint32_t* right = whole_.find(t.substr(k));
        if (right != nullptr) pairs_.insert(*left, *right, {id, id});
      }
    }
  }

  uint32_t size = uint32_t(def_.tokens.size());
  for (const SpecialToken& s : def_.specials) {
    DLF_CHECK(!s.text.empty(), "tokenizer ", src, ": a special token (id ", s.id, ") has no text");
    DLF_CHECK(s.id < kNone, "tokenizer ", src, ": special token ", s.text, " has id ", s.id);
    size = std::max(size, s.id + 1);
  }
  std::sort(def_.specials.begin(), def_.specials.end(),
            [](const SpecialToken& a, const SpecialToken& b) { return a.id < b.id; });
  for (size_t i = 1; i < def_.specials.size(); ++i)
    DLF_CHECK(def_.specials[i].id != def_.specials[i - 1].id, "tokenizer ", src,
              ": special tokens ", def_.specials[i - 1].text, " and ", def_.specials[i].text,
              " have the same id ", def_.specials[i].id);

  // An id's bytes: its ordinary token's, else its special token's text.
  std::vector<std::string_view> by_id(size);
  for (uint32_t id = 0; id < def_.tokens.size(); ++id) by_id[id] = def_.tokens[id];
  for (const SpecialToken& s : def_.specials)
    if (by_id[s.id].empty()) by_id[s.id] = s.text;
  offsets_.reserve(size + 1);
  is_token_.reserve(size);
  offsets_.push_back(0);
  for (const std::string_view b : by_id) {
    bytes_ += b;
    offsets_.push_back(uint32_t(bytes_.size()));
    is_token_.push_back(!b.empty());
  }
  const std::string c = canonical(def_);
  hash_ = checksum64(c.data(), c.size());
}

std::string_view Model::bytes_of(uint32_t id) const {
  DLF_CHECK(id < vocab_size() && is_token_[id], "token id ", id, " is no token of tokenizer ",
            def_.source, " (ids below ", vocab_size(),
            id < vocab_size() ? ", and this one is unused" : "", ")");
  return std::string_view(bytes_).substr(offsets_[id], offsets_[id + 1] - offsets_[id]);
}

void Model::merge(std::string_view piece, std::vector<uint32_t>& out, MergeScratch& s) const {
  const auto n = uint32_t(piece.size());
  if (n == 1) {
    out.push_back(byte_ids_[static_cast<unsigned char>(piece[0])]);
    return;
  }
  s.ids.resize(n);
  s.next.resize(n);
  s.prev.resize(n);
  s.heap.clear();
  for (uint32_t i = 0; i < n; ++i) {
    s.ids[i] = byte_ids_[static_cast<unsigned char>(piece[i])];
    s.next[i] = i + 1;
    s.prev[i] = i - 1;  // kNone for the first
  }
  const auto later = [](const MergeScratch::Candidate& a, const MergeScratch::Candidate& b) {
    return a.priority != b.priority ? a.priority > b.priority : a.pos > b.pos;
  };
  const auto consider = [&](uint32_t left) {
    const uint32_t right = s.next[left];
    if (right >= n) return;
    const PairMap::Merge* m = pairs_.find(s.ids[left], s.ids[right]);
    if (m == nullptr) return;
    s.heap.push_back({m->priority, left, s.ids[left], s.ids[right], m->result});
    std::push_heap(s.heap.begin(), s.heap.end(), later);
  };
  for (uint32_t i = 0; i + 1 < n; ++i) consider(i);
  while (!s.heap.empty()) {
    std::pop_heap(s.heap.begin(), s.heap.end(), later);
    const MergeScratch::Candidate c = s.heap.back();
    s.heap.pop_back();
    // A candidate is stale when either part has merged since: a part's id changes with every
    // merge (to a longer token), and a part merged into its left neighbour is gone (kNone).
    const uint32_t right = s.next[c.pos];
    if (s.ids[c.pos] != c.left || right >= n || s.ids[right] != c.right) continue;
    s.ids[c.pos] = c.result;
    s.ids[right] = kNone;
    s.next[c.pos] = s.next[right];
    if (s.next[c.pos] < n) s.prev[s.next[c.pos]] = c.pos;
    if (s.prev[c.pos] != kNone) consider(s.prev[c.pos]);
    consider(c.pos);
  }
  for (uint32_t i = 0; i < n; i = s.next[i]) out.push_back(s.ids[i]);
}

}  // namespace dlf::tokenizers::detail
