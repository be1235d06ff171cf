// Token shards: a corpus's token ids in files of a documented header and the ids after it
// (docs/data.md), written once and read through a read-only memory map, so that a corpus larger
// than memory trains: the kernel pages in what a batch reads and drops it again.
#pragma once
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <span>
#include <string>

namespace dlf::nn::data {

/// What a shard's header says (the first kShardHeaderBytes bytes, little-endian).
struct ShardHeader {
  uint32_t version = 1;         ///< of the format; this dlf reads version 1
  uint32_t token_bytes = 2;     ///< 2 (u16 ids) or 4 (u32 ids)
  uint64_t count = 0;           ///< ids after the header
  uint64_t tokenizer_hash = 0;  ///< tokenizers::Tokenizer::hash of the ids' tokenizer; 0: bytes
  uint32_t vocab = 256;         ///< one past the largest id the tokenizer makes
};

/// The 8 bytes every shard starts with.
inline constexpr char kShardMagic[8] = {'D', 'L', 'F', 'T', 'O', 'K', 'S', '\0'};
/// Bytes before the first id (magic, header, zeros up to here).
inline constexpr int64_t kShardHeaderBytes = 64;
/// How a shard's file name ends.
inline constexpr const char* kShardExtension = ".tok";

/// Writes one shard: ids are appended as they come, and close() writes their count into the
/// header (a shard never closed says 0 ids, and its reader refuses the bytes after the header).
class ShardWriter {
 public:
  /// A shard at `path` of ids of `token_bytes` bytes made by the tokenizer of `tokenizer_hash`
  /// (0: bytes) with `vocab` ids; a dlf::Error if the file cannot be written.
  ShardWriter(const std::filesystem::path& path, uint64_t tokenizer_hash, uint32_t vocab);
  /// Appends `ids`; a dlf::Error names an id at or past the vocabulary.
  void append(std::span<const uint32_t> ids);
  /// Writes the count into the header and closes the file.
  void close();
  uint64_t count() const { return header_.count; }  ///< ids appended so far

 private:
  std::filesystem::path path_;
  ShardHeader header_;
  std::ofstream out_;
};

/// The id width a vocabulary needs: 2 bytes up to 65536 ids, else 4.
uint32_t token_bytes_for(uint32_t vocab);

/// One shard, memory-mapped read-only. Opening checks the magic, the version, the id width and
/// that the file holds the ids its header counts; a dlf::Error names the file and the fault.
class TokenShard {
 public:
  explicit TokenShard(const std::filesystem::path& path);  ///< maps `path`
  ~TokenShard();
  TokenShard(TokenShard&& other) noexcept;  ///< takes the mapping
  TokenShard(const TokenShard&) = delete;
  TokenShard& operator=(const TokenShard&) = delete;
  TokenShard& operator=(TokenShard&&) = delete;

  const ShardHeader& header() const { return header_; }    ///< what the header says
  int64_t size() const { return int64_t(header_.count); }  ///< ids in the shard
  /// Ids [start, start + n) widened to i64 into `out` (n of them).
  void read(int64_t start, int64_t n, int64_t* out) const;
  const std::filesystem::path& path() const { return path_; }  ///< the file

 private:
  std::filesystem::path path_;
  ShardHeader header_;
  const unsigned char* map_ = nullptr;
  size_t map_bytes_ = 0;
};

}  // namespace dlf::nn::data
