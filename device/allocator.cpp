#include <dlf/device/allocator.h>

#include <algorithm>
#include <cstdlib>
#include <deque>
#include <map>
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

// Host memory. Blocks of 1 MiB and more are kept when freed and handed out again for the same
// rounded size: glibc returns such blocks to the kernel (mmap/munmap above its threshold),
// and every fresh one page-faults on first touch — for a training step that allocates the same
// large activations and gradients every time, that was a fifth of the step. The cache holds
// at most kCacheLimit bytes (the oldest blocks go first) and is dropped when malloc fails.
class HostAllocator final : public Allocator {
 public:
  ~HostAllocator() override { release_cache(); }
  void* allocate(size_t bytes) override {
    const size_t size = rounded(bytes);
    void* ptr = size >= kCachedFrom ? take_cached(size) : nullptr;
    if (ptr == nullptr) ptr = std::aligned_alloc(kAlignment, size);
    if (ptr == nullptr && release_cache() > 0) ptr = std::aligned_alloc(kAlignment, size);
    if (ptr == nullptr) throw std::bad_alloc();
    count_alloc(bytes);
    return ptr;
  }
  void deallocate(void* ptr, size_t bytes) override {
    count_free(bytes);
    const size_t size = rounded(bytes);
    if (size < kCachedFrom || size > kCacheLimit) return std::free(ptr);
    std::lock_guard lock(mutex_);
    while (cached_bytes_ + size > kCacheLimit) evict_oldest();
    cache_.emplace(size, Block{ptr, ++clock_});
    cached_bytes_ += size;
  }
  size_t release_cache() {
    std::lock_guard lock(mutex_);
    const size_t freed = cached_bytes_;
    while (!cache_.empty()) evict_oldest();
    return freed;
  }

 private:
  static constexpr size_t kCachedFrom = size_t(1) << 20;
  static constexpr size_t kCacheLimit = size_t(4) << 30;
  static constexpr size_t kGranule = size_t(64) << 10;  // large sizes round to 64 KiB

  struct Block {
    void* ptr;
    uint64_t freed_at;
  };

  static size_t rounded(size_t bytes) {
    const size_t unit = bytes >= kCachedFrom ? kGranule : kAlignment;
    return std::max<size_t>(unit, (bytes + unit - 1) / unit * unit);
  }
  void* take_cached(size_t size) {
    std::lock_guard lock(mutex_);
    auto it = cache_.find(size);
    if (it == cache_.end()) return nullptr;
    void* ptr = it->second.ptr;
    cache_.erase(it);
    cached_bytes_ -= size;
    return ptr;
  }
  void evict_oldest() {  // with mutex_ held
    auto oldest = std::min_element(cache_.begin(), cache_.end(), [](const auto& a, const auto& b) {
      return a.second.freed_at < b.second.freed_at;
    });
    std::free(oldest->second.ptr);
    cached_bytes_ -= oldest->first;
    cache_.erase(oldest);
  }

  std::mutex mutex_;
  std::multimap<size_t, Block> cache_;
  size_t cached_bytes_ = 0;
  uint64_t clock_ = 0;
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
