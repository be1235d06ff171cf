// Allocators and their live/peak byte counters by category; host memory.
#pragma once
#include <array>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <string>
#include <string_view>

namespace dlf {

/// What memory holds, for out-of-memory reports and per-device memory tables.
enum class MemoryCategory : uint8_t {
  parameters,
  gradients,
  optimizer_state,
  activations,  ///< allocated during a forward pass (held for backward)
  temporaries,  ///< everything else
};
inline constexpr int kMemoryCategories = 5;  ///< how many MemoryCategory values
/// "parameters", "optimizer state", ...
std::string_view memory_category_name(MemoryCategory category);

/// Allocations made on this thread while it lives are counted under `category`.
class MemoryScope {
 public:
  /// Allocations on this thread count as `category` until the scope ends.
  explicit MemoryScope(MemoryCategory category);
  ~MemoryScope();
  MemoryScope(const MemoryScope&) = delete;
  MemoryScope& operator=(const MemoryScope&) = delete;
  static MemoryCategory current();  ///< the calling thread's category now

 private:
  MemoryCategory saved_;
};

using BytesByCategory = std::array<int64_t, kMemoryCategories>;  ///< bytes per category

/// An allocator's counters.
struct MemoryStats {
  int64_t live_bytes = 0;        ///< bytes allocated and not freed
  int64_t peak_bytes = 0;        ///< the most live_bytes reached since reset_peak()
  int64_t allocations = 0;       ///< number of allocate() calls so far
  BytesByCategory live_by{};     ///< live bytes per category
  BytesByCategory at_peak_by{};  ///< live bytes per category when the peak was reached
};

/// "1.50 GiB", "312.0 MiB", "12 B".
std::string format_bytes(double bytes);
/// "parameters 1.2 GiB, gradients 1.2 GiB, ..." (categories with bytes only).
std::string format_by_category(const BytesByCategory& bytes);

/// Where a device's bytes come from, and how many are live by category.
class Allocator {
 public:
  virtual ~Allocator() = default;
  /// Returns memory for `bytes` bytes (64-byte aligned), or nullptr on a device without data.
  /// Throws dlf::OutOfMemory when the device's capacity would be exceeded.
  virtual void* allocate(size_t bytes, MemoryCategory category) = 0;
  /// Returns `bytes` allocated as `category`.
  virtual void deallocate(void* ptr, size_t bytes, MemoryCategory category) = 0;
  /// Moves live bytes from one category to another (a gradient becoming a parameter's .grad).
  void recategorize(size_t bytes, MemoryCategory from, MemoryCategory to);

  MemoryStats stats() const;  ///< a snapshot of the counters
  /// Starts a new peak measurement at the current live bytes.
  void reset_peak();

 protected:
  /// Counts an allocation; returns the live bytes after it.
  int64_t count_alloc(size_t bytes, MemoryCategory category);
  /// Counts a free made behind the allocator's back (an imported buffer)
  void count_free(size_t bytes, MemoryCategory category);

 private:
  mutable std::mutex mutex_;
  MemoryStats stats_;
};

/// Host memory: the cpu device's allocator, and where sim devices keep their data.
Allocator& host_allocator();

}  // namespace dlf
