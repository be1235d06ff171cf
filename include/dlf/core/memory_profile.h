// "What is using my memory", as PyTorch's memory snapshot answers it: a dispatch observer that
// follows the bytes ops make on one device and, when the device's live bytes peak, keeps which
// of them are alive — by the op that made them, their memory category and the label (a block,
// backward) they were made under — and the live bytes by category after every op.
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include <dlf/core/op.h>
#include <dlf/device/allocator.h>

namespace dlf {

/// While it lives, what ops on this thread make is labelled `label` in memory profiles, after
/// the labels of the scopes around it ("backward/transformer.h.3"). nn's blocks label their
/// forward with their name; autograd labels backward.
class MemoryLabel {
 public:
  /// Ops on this thread are labelled `label` (inside the enclosing scopes' labels) until the
  /// scope ends.
  explicit MemoryLabel(std::string label);
  ~MemoryLabel();
  MemoryLabel(const MemoryLabel&) = delete;
  MemoryLabel& operator=(const MemoryLabel&) = delete;
  /// The calling thread's labels, outermost first, joined by '/' ("" outside every scope).
  static std::string current();
};

/// Live bytes by category after one op.
struct MemorySample {
  int64_t op = 0;             ///< how many outermost ops had run (1: after the first)
  std::string name;           ///< that op
  BytesByCategory live_by{};  ///< the device's live bytes per category then
};

/// One group of tensors alive at the peak.
struct MemoryRow {
  std::string op;           ///< the op that made them
  MemoryCategory category;  ///< what their bytes count as
  std::string label;        ///< the label they were made under (MemoryLabel)
  int64_t tensors = 0;      ///< how many storages
  int64_t bytes = 0;        ///< their bytes
};

/// The device's memory when its live bytes were highest, between two outermost ops.
struct MemorySnapshot {
  int64_t op = 0;             ///< after how many outermost ops
  std::string after;          ///< the op that ended then
  int64_t live_bytes = 0;     ///< the device's live bytes then
  BytesByCategory live_by{};  ///< by category
  /// what ops made, still alive: grouped by (op, category, label), the most bytes first
  std::vector<MemoryRow> rows;
  /// live bytes no op seen here made (parameters, optimizer state, inputs made before)
  int64_t untracked_bytes = 0;
};

/// Watches the ops dispatched on the calling thread that make tensors on `device` (see above).
class MemoryProfile : public DispatchObserver {
 public:
  /// Starts observing the calling thread.
  explicit MemoryProfile(Device device);
  ~MemoryProfile() override;
  MemoryProfile(const MemoryProfile&) = delete;
  MemoryProfile& operator=(const MemoryProfile&) = delete;

  /// Records the op's new storages and, after an outermost op, the live bytes (DispatchObserver).
  void on_op(const OpDef& op, Inputs inputs, const Attrs& attrs,
             std::span<const Tensor> outputs) override;
  void on_op_start(const OpDef& op) override;  ///< tracks nesting (DispatchObserver)

  /// The snapshot at the highest live bytes seen after an outermost op.
  const MemorySnapshot& peak() const { return peak_; }
  /// Live bytes by category after each outermost op, in order.
  const std::vector<MemorySample>& timeline() const { return timeline_; }
  /// The peak's table (the `rows` largest groups, the rest summed) and `points` samples of the
  /// timeline, evenly spaced, with the peak's among them.
  void print(std::ostream& os, int rows = 15, int points = 12) const;

 private:
  struct Made {
    std::weak_ptr<Storage> storage;
    std::string op, label;
  };
  void take_snapshot(int64_t live_bytes, const BytesByCategory& live_by, const std::string& after);

  Device device_;
  int depth_ = 0;
  int64_t ops_ = 0;
  std::map<const Storage*, Made> made_;
  size_t pruned_at_ = 1024;  // made_'s size that triggers dropping the freed
  MemorySnapshot peak_;
  std::vector<MemorySample> timeline_;
};

}  // namespace dlf
