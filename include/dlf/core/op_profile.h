// Per-op profile of what a thread dispatches: calls, self and total wall time, FLOPs and bytes,
// by op name (or by op and input shapes) — torch.profiler's key_averages().
#pragma once
#include <chrono>
#include <map>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include <dlf/core/op.h>

namespace dlf {

/// How an OpProfile groups its rows.
struct OpProfileOptions {
  bool by_shape = false;  ///< one row per op and input shapes ("matmul [8, 64] [64, 32]")
};

/// The peaks a profile row is judged against (a roofline): which bound applies to an op, and
/// how close to it the op ran.
struct Roofline {
  double flops_per_s = 0;  ///< the compute peak of the precision the ops run in
  double bytes_per_s = 0;  ///< the memory bandwidth
};

/// Observes the dispatching thread while it lives. An op that dispatches other ops (a composite
/// backward) counts their time in its total and not in its self time; their FLOPs count on their
/// own rows too. Time is wall time on the cpu device; on sim and meta devices it is the
/// simulated clock's (each outermost op its roofline time, the ops inside it none of their own).
class OpProfile : public DispatchObserver {
 public:
  /// Starts observing the calling thread.
  explicit OpProfile(OpProfileOptions options = {}) : options_(options) { add_observer(this); }
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
    /// wall time with and without the ops it dispatched, FLOPs and bytes moved, summed
    ///@{
    double seconds = 0, self_seconds = 0, flops = 0, bytes = 0;
    ///@}
  };
  /// By op name, or by op and input shapes (OpProfileOptions::by_shape).
  const std::map<std::string, Row>& rows() const { return rows_; }
  /// The ops dispatched at the outermost level only: the work done, each FLOP counted once
  /// (the rows' sum counts a composite op's inner ops twice), and the time spent in ops.
  const Row& outermost() const { return outermost_; }
  /// A table sorted by self time: calls, self and total time, the share of the profiled time,
  /// FLOPs, GFLOP/s and GB/s over the total time and, given the peaks, the bound that applies
  /// (compute or memory) and the share of that bound reached.
  void print(std::ostream& os, std::optional<Roofline> roofline = std::nullopt) const;

 private:
  struct Frame {
    std::chrono::steady_clock::time_point start;
    double children = 0;  // seconds of the ops it dispatched
  };
  OpProfileOptions options_;
  std::map<std::string, Row> rows_;
  Row outermost_;
  std::vector<Frame> stack_;
};

}  // namespace dlf
