#include <dlf/device/allocator.h>

#include <cstdlib>
#include <deque>
#include <mutex>

namespace dlf {

MemoryStats Allocator::stats() const { return {live_.load(), peak_.load(), allocations_.load()}; }

void Allocator::reset_peak() { peak_.store(live_.load()); }

void Allocator::count_alloc(size_t bytes) {
  int64_t live = live_.fetch_add(static_cast<int64_t>(bytes)) + static_cast<int64_t>(bytes);
  int64_t peak = peak_.load();
  while (live > peak && !peak_.compare_exchange_weak(peak, live)) {
  }
  allocations_.fetch_add(1);
}

void Allocator::count_free(size_t bytes) { live_.fetch_sub(static_cast<int64_t>(bytes)); }

namespace {

constexpr size_t kAlignment = 64;

class HostAllocator final : public Allocator {
 public:
  void* allocate(size_t bytes) override {
    size_t rounded = (bytes + kAlignment - 1) / kAlignment * kAlignment;
    void* ptr = std::aligned_alloc(kAlignment, rounded == 0 ? kAlignment : rounded);
    if (ptr == nullptr) throw std::bad_alloc();
    count_alloc(bytes);
    return ptr;
  }
  void deallocate(void* ptr, size_t bytes) override {
    std::free(ptr);
    count_free(bytes);
  }
};

// Counts bytes, holds none: how the meta device plans layouts it never computes.
class CountingAllocator final : public Allocator {
 public:
  void* allocate(size_t bytes) override {
    count_alloc(bytes);
    return nullptr;
  }
  void deallocate(void*, size_t bytes) override { count_free(bytes); }
};

}  // namespace

Allocator& allocator_for(Device device) {
  static HostAllocator cpu;
  static std::mutex mutex;
  static std::deque<CountingAllocator> metas;
  switch (device.type) {
    case DeviceType::cpu:
      return cpu;
    case DeviceType::sim:  // the simulated device's own allocator arrives with its backend
    case DeviceType::meta: {
      std::lock_guard lock(mutex);
      while (metas.size() <= static_cast<size_t>(device.index)) metas.emplace_back();
      return metas[device.index];
    }
  }
  return cpu;
}

}  // namespace dlf
