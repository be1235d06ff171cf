// An abstract run: ops dispatched on this thread while one is alive are recorded, not run — the
// way graph capture traces a step without computing it (torch.compile's fake tensors).
#pragma once
#include <dlf/core/op.h>

namespace dlf::detail {

/// While alive, ops dispatched on this thread run no kernel, charge no device clock and write
/// no trace, and only `observer` sees them; outputs are storages of their size that hold no
/// bytes, so the run takes none of the device's memory. What the step reads from outside
/// (parameters) is untouched; in-place ops change nothing.
class AbstractRun {
 public:
  explicit AbstractRun(DispatchObserver& observer);
  ~AbstractRun();
  AbstractRun(const AbstractRun&) = delete;
  AbstractRun& operator=(const AbstractRun&) = delete;

 private:
  std::vector<DispatchObserver*> saved_;
};

}  // namespace dlf::detail
