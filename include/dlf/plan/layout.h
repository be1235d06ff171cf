// The layout of a training run: the dp x tp x pp the command line gives, or, for a GPT on
// --devices alone, planned on meta devices of the run's spec — the fastest predicted one that
// fits both the devices and this machine's memory (on cpu ranks, which share this machine's
// cores, the most data-parallel one that fits).
#pragma once
#include <string>

#include <dlf/plan/plan.h>

namespace dlf::plan {

/// What `dlf train` asks: its model, devices, what it fixed of the layout and its flags.
struct LayoutQuery {
  std::string model;  ///< a registered name
  int devices = 1;    ///< ranks
  /// as given; all 0 (and no --zero 2 or 3): planned
  ///@{
  int dp = 0, tp = 0, pp = 0;
  ///@}
  int64_t micro_batch = 0;  ///< 0: train::default_micro_batch
  bool cpu = false;         ///< the ranks are cpu devices: simulated speed means nothing there
  /// the run as a plan asks it (its layout and micro-batch are chosen here); for cpu ranks,
  /// the spec to plan their memory with
  PlanOptions run;
  double host_available = 0;  ///< bytes; 0: available_host_memory()
};

/// The layout, and when it was planned the table of the plans for the lead to print; when
/// nothing fits, `refusal` says why (the caller prints the table and fails with it).
struct LayoutChoice {
  parallel::Layout layout;  ///< dp x tp x pp of the run
  std::string table;        ///< the plans of the layouts considered (empty: none was planned)
  std::string refusal;      ///< why nothing fits (empty: `layout` does)
};

/// A dlf::Error for a given layout that does not multiply to the devices or does not fit this
/// machine's memory.
LayoutChoice choose_layout(const LayoutQuery& query);

}  // namespace dlf::plan
