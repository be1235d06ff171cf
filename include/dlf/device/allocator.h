// Device memory: one allocator per device, with live/peak byte counters.
#pragma once
#include <atomic>
#include <cstddef>
#include <cstdint>

#include <dlf/device/device.h>

namespace dlf {

struct MemoryStats {
  int64_t live_bytes = 0;
  int64_t peak_bytes = 0;
  int64_t allocations = 0;  ///< number of allocate() calls so far
};

class Allocator {
 public:
  virtual ~Allocator() = default;
  /// Returns memory for `bytes` bytes (64-byte aligned), or nullptr on a device without data.
  virtual void* allocate(size_t bytes) = 0;
  virtual void deallocate(void* ptr, size_t bytes) = 0;

  MemoryStats stats() const;
  /// Starts a new peak measurement at the current live bytes.
  void reset_peak();

 protected:
  void count_alloc(size_t bytes);
  void count_free(size_t bytes);

 private:
  std::atomic<int64_t> live_{0}, peak_{0}, allocations_{0};
};

/// The allocator behind a device. Stable for the life of the process.
Allocator& allocator_for(Device device);

}  // namespace dlf
