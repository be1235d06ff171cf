// Four independent multiply-rotate lanes over 32-byte blocks (the structure of xxHash64), then
// the tail and the length, then a final avalanche: every input bit reaches every output bit.
#include <dlf/core/checksum.h>

#include <bit>
#include <cstring>

namespace dlf {
namespace {

constexpr uint64_t kPrime1 = 0x9E3779B185EBCA87ull;
constexpr uint64_t kPrime2 = 0xC2B2AE3D27D4EB4Full;
constexpr uint64_t kPrime3 = 0x165667B19E3779F9ull;

uint64_t load64(const unsigned char* p) {
  uint64_t v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

uint64_t round(uint64_t acc, uint64_t word) {
  return std::rotl(acc + word * kPrime2, 31) * kPrime1;
}

uint64_t avalanche(uint64_t h) {
  h ^= h >> 33;
  h *= kPrime2;
  h ^= h >> 29;
  h *= kPrime3;
  return h ^ (h >> 32);
}

}  // namespace

uint64_t checksum64(const void* data, size_t size) {
  const auto* p = static_cast<const unsigned char*>(data);
  uint64_t lanes[4] = {kPrime1 + kPrime2, kPrime2, 0, 0 - kPrime1};
  size_t i = 0;
  for (; i + 32 <= size; i += 32) {
    for (int l = 0; l < 4; ++l) lanes[l] = round(lanes[l], load64(p + i + 8 * l));
  }
  uint64_t h = std::rotl(lanes[0], 1) + std::rotl(lanes[1], 7) + std::rotl(lanes[2], 12) +
               std::rotl(lanes[3], 18);
  for (const uint64_t lane : lanes) h = (h ^ round(0, lane)) * kPrime1 + kPrime3;
  for (; i + 8 <= size; i += 8) h = std::rotl(h ^ round(0, load64(p + i)), 27) * kPrime1 + kPrime3;
  for (; i < size; ++i) h = std::rotl(h ^ (p[i] * kPrime3), 11) * kPrime1;
  return avalanche(h + size);
}

uint64_t checksum64(const Tensor& tensor) {
  const Tensor data = tensor.contiguous();
  return checksum64(data.raw_data(), data.nbytes());
}

}  // namespace dlf
