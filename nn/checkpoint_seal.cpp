// The seal's layout, at the start of the file (little-endian, 8-byte fields):
//   "DLFSEAL1", user block size, file size, structure checksum, region count, table checksum,
//   then per region: offset, size, checksum, label length (4 bytes), label; zeros to the end of
//   the user block. The structure checksum covers every byte after the user block that no region
//   covers (HDF5's metadata, the names and the config), the table checksum the region table.
#include "checkpoint_seal.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <dlf/core/checksum.h>
#include <dlf/error.h>

#include <algorithm>
#include <bit>
#include <cstring>

namespace dlf::nn::seal {
namespace {

constexpr char kMagic[8] = {'D', 'L', 'F', 'S', 'E', 'A', 'L', '1'};
constexpr uint64_t kHeaderBytes = 48, kEntryBytes = 28;
constexpr uint64_t kMaxUserBlock = uint64_t(1) << 26;  // 64 MiB: a million tensors' labels

// A file mapped read-only (or, for writing the seal, read-write).
class Mapping {
 public:
  Mapping(const std::string& path, bool writable) : path_(path) {
    fd_ = ::open(path.c_str(), (writable ? O_RDWR : O_RDONLY) | O_CLOEXEC);
    DLF_CHECK(fd_ >= 0, "cannot open ", path, ": ", std::strerror(errno));
    struct stat st {};
    DLF_CHECK(::fstat(fd_, &st) == 0 && S_ISREG(st.st_mode), path, " is not a regular file");
    size_ = uint64_t(st.st_size);
    if (size_ == 0) return;
    void* p =
        ::mmap(nullptr, size_, writable ? PROT_READ | PROT_WRITE : PROT_READ, MAP_SHARED, fd_, 0);
    DLF_CHECK(p != MAP_FAILED, "cannot map ", path, ": ", std::strerror(errno));
    data_ = static_cast<unsigned char*>(p);
  }
  ~Mapping() {
    if (data_ != nullptr) ::munmap(data_, size_);
    ::close(fd_);
  }
  Mapping(const Mapping&) = delete;
  Mapping& operator=(const Mapping&) = delete;

  unsigned char* data() const { return data_; }
  uint64_t size() const { return size_; }
  // Writes the mapped changes to the file (before the caller's fsync).
  void flush() const {
    DLF_CHECK(data_ == nullptr || ::msync(data_, size_, MS_SYNC) == 0, "writing the seal of ",
              path_, " failed: ", std::strerror(errno));
  }

 private:
  std::string path_;
  int fd_ = -1;
  unsigned char* data_ = nullptr;
  uint64_t size_ = 0;
};

uint64_t load64(const unsigned char* p) {
  uint64_t v;
  std::memcpy(&v, p, 8);
  return v;
}

void store64(unsigned char* p, uint64_t v) { std::memcpy(p, &v, 8); }

// The checksum of the bytes in [begin, end) that no region covers: one per gap, then of those.
uint64_t structure_checksum(const unsigned char* file, uint64_t begin, uint64_t end,
                            const std::vector<Region>& sorted) {
  std::vector<uint64_t> gaps;
  uint64_t at = begin;
  for (const Region& r : sorted) {
    gaps.push_back(checksum64(file + at, r.offset - at));
    at = r.offset + r.size;
  }
  gaps.push_back(checksum64(file + at, end - at));
  return checksum64(gaps.data(), gaps.size() * sizeof(uint64_t));
}

bool by_offset(const Region& a, const Region& b) { return a.offset < b.offset; }

}  // namespace

uint64_t user_block_size(const std::vector<std::string>& labels) {
  uint64_t bytes = kHeaderBytes;
  for (const std::string& label : labels) bytes += kEntryBytes + label.size();
  DLF_CHECK(bytes <= kMaxUserBlock, "checkpoint: ", labels.size(), " tensors' names take ", bytes,
            " bytes, more than the ", kMaxUserBlock, " a checkpoint's seal may have");
  return std::max<uint64_t>(512, std::bit_ceil(bytes));
}

void write(const std::string& path, uint64_t user_block, std::vector<Region> regions) {
  const Mapping file(path, true);
  DLF_CHECK(file.size() >= user_block, "checkpoint ", path, " is shorter than its user block");
  std::sort(regions.begin(), regions.end(), by_offset);
  std::vector<unsigned char> table;
  for (const Region& r : regions) {
    unsigned char entry[kEntryBytes];
    store64(entry, r.offset);
    store64(entry + 8, r.size);
    store64(entry + 16, r.checksum);
    const auto length = uint32_t(r.label.size());
    std::memcpy(entry + 24, &length, 4);
    table.insert(table.end(), entry, entry + kEntryBytes);
    table.insert(table.end(), r.label.begin(), r.label.end());
  }
  DLF_CHECK(kHeaderBytes + table.size() <= user_block, "checkpoint ", path,
            ": the seal does not fit its user block");
  unsigned char* head = file.data();
  std::memcpy(head, kMagic, 8);
  store64(head + 8, user_block);
  store64(head + 16, file.size());
  store64(head + 24, structure_checksum(head, user_block, file.size(), regions));
  store64(head + 32, regions.size());
  store64(head + 40, checksum64(table.data(), table.size()));
  std::memcpy(head + kHeaderBytes, table.data(), table.size());
  file.flush();
}

void verify(const std::string& path) {
  const Mapping file(path, false);
  const unsigned char* head = file.data();
  const uint64_t size = file.size();
  DLF_CHECK(size >= kHeaderBytes && std::memcmp(head, kMagic, 8) == 0, "checkpoint ", path,
            " has no seal: it is not a dlf checkpoint, or one written by an older dlf");
  const uint64_t user_block = load64(head + 8);
  DLF_CHECK(user_block >= 512 && user_block <= kMaxUserBlock && std::has_single_bit(user_block) &&
                user_block <= size,
            "checkpoint ", path, " is damaged: its seal is unreadable");
  DLF_CHECK(load64(head + 16) == size, "checkpoint ", path, " is ", size, " bytes long, but ",
            load64(head + 16), " were written: it was truncated or extended");
  const uint64_t count = load64(head + 32);
  const unsigned char* table = head + kHeaderBytes;
  const unsigned char* table_end = head + user_block;
  std::vector<Region> regions;
  const unsigned char* p = table;
  for (uint64_t i = 0; i < count; ++i) {
    DLF_CHECK(uint64_t(table_end - p) >= kEntryBytes, "checkpoint ", path,
              " is damaged: its seal is unreadable");
    Region r{.label = {}, .offset = load64(p), .size = load64(p + 8), .checksum = load64(p + 16)};
    uint32_t length = 0;
    std::memcpy(&length, p + 24, 4);
    p += kEntryBytes;
    DLF_CHECK(uint64_t(table_end - p) >= length, "checkpoint ", path,
              " is damaged: its seal is unreadable");
    r.label.assign(reinterpret_cast<const char*>(p), length);
    p += length;
    regions.push_back(std::move(r));
  }
  DLF_CHECK(checksum64(table, uint64_t(p - table)) == load64(head + 40), "checkpoint ", path,
            " is damaged: its seal does not match its own checksum");
  // From here the table is as written: its regions lie inside the file, in order, apart.
  uint64_t end = user_block;
  for (const Region& r : regions) {
    DLF_CHECK(r.offset >= end && r.offset <= size && r.size <= size - r.offset, "checkpoint ", path,
              " is damaged: its seal is inconsistent");
    end = r.offset + r.size;
  }
  DLF_CHECK(structure_checksum(head, user_block, size, regions) == load64(head + 24), "checkpoint ",
            path,
            " is corrupt: its structure (names, config, HDF5 metadata) does not match the "
            "checksum saved with it");
  for (const Region& r : regions) {
    DLF_CHECK(checksum64(head + r.offset, r.size) == r.checksum, "checkpoint ", path, ": tensor '",
              r.label, "' is corrupt: its bytes do not match the checksum saved with it");
  }
}

}  // namespace dlf::nn::seal
