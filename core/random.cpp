#include <dlf/core/random.h>

namespace dlf {

Generator& default_generator() {
  thread_local Generator g(0);
  return g;
}

void manual_seed(uint64_t seed) { default_generator().manual_seed(seed); }

std::array<uint32_t, 4> philox(uint64_t seed, uint64_t counter) {
  constexpr uint32_t kM0 = 0xD2511F53u, kM1 = 0xCD9E8D57u;
  constexpr uint32_t kW0 = 0x9E3779B9u, kW1 = 0xBB67AE85u;
  std::array<uint32_t, 4> c = {static_cast<uint32_t>(counter), static_cast<uint32_t>(counter >> 32),
                               0, 0};
  uint32_t k0 = static_cast<uint32_t>(seed), k1 = static_cast<uint32_t>(seed >> 32);
  for (int round = 0; round < 10; ++round) {
    uint64_t p0 = static_cast<uint64_t>(kM0) * c[0];
    uint64_t p1 = static_cast<uint64_t>(kM1) * c[2];
    c = {static_cast<uint32_t>(p1 >> 32) ^ c[1] ^ k0, static_cast<uint32_t>(p1),
         static_cast<uint32_t>(p0 >> 32) ^ c[3] ^ k1, static_cast<uint32_t>(p0)};
    k0 += kW0;
    k1 += kW1;
  }
  return c;
}

}  // namespace dlf
