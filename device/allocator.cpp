#include <dlf/device/allocator.h>

#include <algorithm>
#include <bit>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <mutex>

namespace dlf {

std::string_view memory_category_name(MemoryCategory category) {
  static constexpr std::string_view names[] = {"parameters", "gradients", "optimizer state",
                                               "activations", "temporaries"};
  return names[static_cast<int>(category)];
}

namespace {
thread_local MemoryCategory current_category = MemoryCategory::temporaries;
}

MemoryScope::MemoryScope(MemoryCategory category) : saved_(current_category) {
  current_category = category;
}
MemoryScope::~MemoryScope() { current_category = saved_; }
MemoryCategory MemoryScope::current() { return current_category; }

std::string format_bytes(double bytes) {
  static constexpr const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int unit = 0;
  while (bytes >= 1024 && unit < 4) {
    bytes /= 1024;
    ++unit;
  }
  char text[32];
  std::snprintf(text, sizeof text, unit == 0 ? "%.0f %s" : "%.2f %s", bytes, units[unit]);
  return text;
}

std::string format_by_category(const BytesByCategory& bytes) {
  std::string out;
  for (int c = 0; c < kMemoryCategories; ++c) {
    if (bytes[c] == 0) continue;
    if (!out.empty()) out += ", ";
    out.append(memory_category_name(static_cast<MemoryCategory>(c)))
        .append(" ")
        .append(format_bytes(static_cast<double>(bytes[c])));
  }
  return out.empty() ? "nothing" : out;
}

MemoryStats Allocator::stats() const {
  std::lock_guard lock(mutex_);
  return stats_;
}

void Allocator::reset_peak() {
  std::lock_guard lock(mutex_);
  stats_.peak_bytes = stats_.live_bytes;
  stats_.at_peak_by = stats_.live_by;
}

int64_t Allocator::count_alloc(size_t bytes, MemoryCategory category) {
  std::lock_guard lock(mutex_);
  stats_.live_bytes += static_cast<int64_t>(bytes);
  stats_.live_by[static_cast<int>(category)] += static_cast<int64_t>(bytes);
  ++stats_.allocations;
  if (stats_.live_bytes > stats_.peak_bytes) {
    stats_.peak_bytes = stats_.live_bytes;
    stats_.at_peak_by = stats_.live_by;
  }
  return stats_.live_bytes;
}

void Allocator::count_free(size_t bytes, MemoryCategory category) {
  std::lock_guard lock(mutex_);
  stats_.live_bytes -= static_cast<int64_t>(bytes);
  stats_.live_by[static_cast<int>(category)] -= static_cast<int64_t>(bytes);
}

void Allocator::recategorize(size_t bytes, MemoryCategory from, MemoryCategory to) {
  std::lock_guard lock(mutex_);
  stats_.live_by[static_cast<int>(from)] -= static_cast<int64_t>(bytes);
  stats_.live_by[static_cast<int>(to)] += static_cast<int64_t>(bytes);
}

namespace {

constexpr size_t kAlignment = 64;

// Host memory. Blocks of 64 KiB and more are kept when freed and handed out again for the same
// rounded size: glibc returns such blocks to the kernel (munmap above its mmap threshold, and
// heap trimming in the per-thread arenas that ranks use), and every fresh one page-faults on
// first touch — for a training step that allocates the same activations and gradients every
// time, that was a fifth of the step (and a third of it with 8 ranks). The cache holds at most
// kCacheLimit bytes (the oldest blocks go first) and is dropped when malloc fails.
class HostAllocator final : public Allocator {
 public:
  ~HostAllocator() override { release_cache(); }
  void* allocate(size_t bytes, MemoryCategory category) override {
    const size_t size = rounded(bytes);
    void* ptr = size >= kCachedFrom ? take_cached(size) : nullptr;
    if (ptr == nullptr) ptr = std::aligned_alloc(kAlignment, size);
    if (ptr == nullptr && release_cache() > 0) ptr = std::aligned_alloc(kAlignment, size);
    if (ptr == nullptr) throw std::bad_alloc();
    count_alloc(bytes, category);
    return ptr;
  }
  void deallocate(void* ptr, size_t bytes, MemoryCategory category) override {
    count_free(bytes, category);
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
  static constexpr size_t kCachedFrom = size_t(64) << 10;
  static constexpr size_t kCacheLimit = size_t(4) << 30;

  struct Block {
    void* ptr;
    uint64_t freed_at;
  };

  static size_t rounded(size_t bytes) {
    // Cached sizes round up to an eighth of their power of two (at most 12.5 % more), so
    // nearby sizes share blocks; 4 KiB at least, a page.
    const size_t unit =
        bytes >= kCachedFrom ? std::max<size_t>(4096, std::bit_floor(bytes) / 8) : kAlignment;
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

}  // namespace

Allocator& host_allocator() {
  static HostAllocator host;
  return host;
}

}  // namespace dlf
