#include <dlf/error.h>
#include <dlf/nn/data/token_shard.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <bit>
#include <cstring>
#include <utility>
#include <vector>

namespace dlf::nn::data {
namespace fs = std::filesystem;

// The header's fields are stored as the host lays them out, which the format says is
// little-endian.
static_assert(std::endian::native == std::endian::little, "token shards are little-endian");

namespace {

constexpr uint32_t kVersion = 1;

// Byte offsets of the header's fields (docs/data.md).
constexpr size_t kVersionAt = 8, kTokenBytesAt = 12, kCountAt = 16, kHashAt = 24, kVocabAt = 32;

template <typename T>
void put(unsigned char* bytes, size_t at, T value) {
  std::memcpy(bytes + at, &value, sizeof(T));
}
template <typename T>
T get(const unsigned char* bytes, size_t at) {
  T value;
  std::memcpy(&value, bytes + at, sizeof(T));
  return value;
}

std::vector<unsigned char> header_bytes(const ShardHeader& h) {
  std::vector<unsigned char> bytes(kShardHeaderBytes, 0);
  std::memcpy(bytes.data(), kShardMagic, sizeof kShardMagic);
  put(bytes.data(), kVersionAt, h.version);
  put(bytes.data(), kTokenBytesAt, h.token_bytes);
  put(bytes.data(), kCountAt, h.count);
  put(bytes.data(), kHashAt, h.tokenizer_hash);
  put(bytes.data(), kVocabAt, h.vocab);
  return bytes;
}

}  // namespace

uint32_t token_bytes_for(uint32_t vocab) { return vocab <= 65536 ? 2 : 4; }

ShardWriter::ShardWriter(const fs::path& path, uint64_t tokenizer_hash, uint32_t vocab)
    : path_(path),
      header_{
          .token_bytes = token_bytes_for(vocab), .tokenizer_hash = tokenizer_hash, .vocab = vocab},
      out_(path, std::ios::binary | std::ios::trunc) {
  DLF_CHECK(out_.good(), "cannot write the token shard ", path.string());
  const std::vector<unsigned char> bytes = header_bytes(header_);
  out_.write(reinterpret_cast<const char*>(bytes.data()), std::streamsize(bytes.size()));
}

void ShardWriter::append(std::span<const uint32_t> ids) {
  std::vector<uint16_t> narrow;
  for (uint32_t id : ids)
    DLF_CHECK(id < header_.vocab, "token shard ", path_.string(), ": id ", id,
              " is past the vocabulary of ", header_.vocab);
  if (header_.token_bytes == 2) {
    narrow.assign(ids.begin(), ids.end());
    out_.write(reinterpret_cast<const char*>(narrow.data()), std::streamsize(narrow.size() * 2));
  } else {
    out_.write(reinterpret_cast<const char*>(ids.data()), std::streamsize(ids.size() * 4));
  }
  header_.count += ids.size();
}

void ShardWriter::close() {
  const std::vector<unsigned char> bytes = header_bytes(header_);
  out_.seekp(0);
  out_.write(reinterpret_cast<const char*>(bytes.data()), std::streamsize(bytes.size()));
  out_.close();
  DLF_CHECK(!out_.fail(), "writing the token shard ", path_.string(), " failed (disk full?)");
}

TokenShard::TokenShard(const fs::path& path) : path_(path) {
  const int fd = ::open(path.c_str(), O_RDONLY);
  DLF_CHECK(fd >= 0, "cannot open the token shard ", path.string());
  const auto file_bytes = int64_t(fs::file_size(path));
  if (file_bytes >= kShardHeaderBytes) {
    map_bytes_ = size_t(file_bytes);
    void* map = ::mmap(nullptr, map_bytes_, PROT_READ, MAP_SHARED, fd, 0);
    map_ = map == MAP_FAILED ? nullptr : static_cast<const unsigned char*>(map);
  }
  ::close(fd);
  DLF_CHECK(file_bytes >= kShardHeaderBytes, "token shard ", path.string(), " is ", file_bytes,
            " bytes, shorter than its ", kShardHeaderBytes, "-byte header (truncated?)");
  DLF_CHECK(map_, "cannot map the token shard ", path.string(), " into memory");
  DLF_CHECK(std::memcmp(map_, kShardMagic, sizeof kShardMagic) == 0, "token shard ", path.string(),
            " does not start with DLFTOKS: not a token shard (dlf tokenize "
            "writes them)");
  header_ = {.version = get<uint32_t>(map_, kVersionAt),
             .token_bytes = get<uint32_t>(map_, kTokenBytesAt),
             .count = get<uint64_t>(map_, kCountAt),
             .tokenizer_hash = get<uint64_t>(map_, kHashAt),
             .vocab = get<uint32_t>(map_, kVocabAt)};
  DLF_CHECK(header_.version == kVersion, "token shard ", path.string(), " is format version ",
            header_.version, "; this dlf reads version ", kVersion,
            " (write it again with this "
            "dlf's tokenize)");
  DLF_CHECK(header_.token_bytes == 2 || header_.token_bytes == 4, "token shard ", path.string(),
            " says its ids are ", header_.token_bytes, " bytes wide; they are 2 (u16) or 4 (u32)");
  const auto want = uint64_t(kShardHeaderBytes) + header_.count * header_.token_bytes;
  DLF_CHECK(uint64_t(file_bytes) == want, "token shard ", path.string(), " is ", file_bytes,
            " bytes but its header counts ", header_.count, " ids of ", header_.token_bytes,
            " bytes (", want, " bytes in all): truncated or not closed; tokenize again");
}

TokenShard::~TokenShard() {
  if (map_) ::munmap(const_cast<unsigned char*>(map_), map_bytes_);
}

TokenShard::TokenShard(TokenShard&& other) noexcept
    : path_(std::move(other.path_)),
      header_(other.header_),
      map_(std::exchange(other.map_, nullptr)),
      map_bytes_(other.map_bytes_) {}

void TokenShard::read(int64_t start, int64_t n, int64_t* out) const {
  DLF_CHECK(start >= 0 && n >= 0 && start + n <= size(), "token shard ", path_.string(), ": ids [",
            start, ", ", start + n, ") are past its ", size());
  const unsigned char* ids = map_ + kShardHeaderBytes;
  if (header_.token_bytes == 2) {
    for (int64_t i = 0; i < n; ++i) out[i] = get<uint16_t>(ids, size_t(start + i) * 2);
  } else {
    for (int64_t i = 0; i < n; ++i) out[i] = get<uint32_t>(ids, size_t(start + i) * 4);
  }
}

}  // namespace dlf::nn::data
