// Counter-based random numbers (Philox-4x32-10): element i of a draw depends only on the
// seed and its counter, so results are the same for every thread count and machine.
#pragma once
#include <array>
#include <cstdint>

namespace dlf {

/// A counter-based random stream (Philox): (seed, offset) is its whole state.
class Generator {
 public:
  /// Starts at offset 0 of `seed`'s stream.
  explicit Generator(uint64_t seed = 0) : seed_(seed) {}
  /// Restarts at offset 0 of `seed`'s stream.
  void manual_seed(uint64_t seed) {
    seed_ = seed;
    offset_ = 0;
  }
  /// The stream's seed.
  uint64_t seed() const { return seed_; }
  /// Counters consumed so far; (seed, offset) is the whole state, for checkpoints.
  uint64_t offset() const { return offset_; }
  /// Moves within the stream (a restored checkpoint)
  void set_offset(uint64_t offset) { offset_ = offset; }
  /// Reserves `n` counters and returns the first.
  uint64_t take(uint64_t n) {
    uint64_t first = offset_;
    offset_ += n;
    return first;
  }

 private:
  uint64_t seed_;
  uint64_t offset_ = 0;
};

/// The generator used when none is given: one per thread, as a rank (one thread) owns its
/// random stream; every thread's starts at seed 0.
Generator& default_generator();
/// Reseeds this thread's default generator.
void manual_seed(uint64_t seed);

/// Four 32-bit random words for (seed, counter).
std::array<uint32_t, 4> philox(uint64_t seed, uint64_t counter);

}  // namespace dlf
