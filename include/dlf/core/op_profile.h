// Per-op profile of what a thread dispatches: calls, wall time, FLOPs and bytes by op name.
#pragma once
#include <chrono>
#include <map>
#include <ostream>
#include <string>
#include <vector>

#include <dlf/core/op.h>

namespace dlf {

/// Observes the dispatching thread while it lives. Time is inclusive: an op that dispatches
/// other ops (a composite backward) counts theirs too, and they count again on their own rows.
class OpProfile : public DispatchObserver {
 public:
  OpProfile() { add_observer(this); }
  ~OpProfile() override { remove_observer(this); }
  OpProfile(const OpProfile&) = delete;
  OpProfile& operator=(const OpProfile&) = delete;

  void on_op_start(const OpDef& op) override;
  /// Counts the op (DispatchObserver).
  void on_op(const OpDef& op, Inputs inputs, const Attrs& attrs,
             std::span<const Tensor> outputs) override;

  /// One op's totals.
  struct Row {
    long calls = 0;  ///< dispatches
    /// wall time, FLOPs and bytes moved, summed over the calls
    ///@{
    double seconds = 0, flops = 0, bytes = 0;
    ///@}
  };
  /// By op name.
  const std::map<std::string, Row>& rows() const { return rows_; }
  /// The ops dispatched at the outermost level only: the work done, each FLOP counted once
  /// (the rows' sum counts a composite op's inner ops twice).
  const Row& outermost() const { return outermost_; }
  /// A table sorted by time, with each op's share, GFLOP/s and GB/s.
  void print(std::ostream& os) const;

 private:
  std::map<std::string, Row> rows_;
  Row outermost_;
  std::vector<std::chrono::steady_clock::time_point> starts_;
};

}  // namespace dlf
