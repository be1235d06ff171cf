// How `dlf train --devices N` runs when no layout of the run's memory flags fits: the search
// `dlf plan` makes (plan::search: layouts x memory flags x micro-batches, the fastest that fits)
// picks the layout, --recompute, --zero, --offload and --micro-batch together, keeping each flag
// the command line gave. When a layout of the flags as given fits, it is choose_layout()'s.
#pragma once
#include <cstdint>
#include <string>

#include <dlf/plan/compiled.h>
#include <dlf/plan/layout.h>
#include <dlf/plan/memory_flags.h>

namespace dlf::plan {

/// Which of the searched flags the command line gave (kept as the query's run has them).
struct GivenFlags {
  /// --recompute, --zero, --offload, --micro-batch
  ///@{
  bool recompute = false, zero = false, offload = false, micro_batch = false;
  ///@}
};

/// The run's layout with its memory flags and micro-batch.
struct RunChoice {
  LayoutChoice layout;      ///< the layout, the lines to print first, and why nothing fits
  MemoryFlags flags;        ///< the query's, or those the search chose
  int64_t micro_batch = 0;  ///< the query's, or the one the search chose
  bool searched = false;    ///< the search chose them (layout.table's first line says which)
};

/// choose_layout(query); when no layout fits the simulated devices with the flags given (and
/// the layout was planned: a GPT on sim devices, no layout given), the fastest configuration
/// search() finds among those that keep the `given` flags and fit both the devices (with 5 % of
/// their memory to spare: a run's peak is within 5 % of its plan's) and this machine's memory.
/// Its table then begins with a line naming the flags chosen and why, followed by
/// choose_layout()'s table. When nothing fits, choose_layout()'s refusal stands.
RunChoice choose_run(const LayoutQuery& query, const GivenFlags& given);

/// A run that ran out of memory on a simulated device.
struct OutOfMemoryRun {
  FlagsQuery query;                          ///< its model, layout, devices, batch and micro-batch
  MemoryFlags flags;                         ///< its memory flags
  bool compile = false;                      ///< its step was captured as a graph
  std::string precision;                     ///< "fp32" or "bf16"
  int64_t bucket_bytes = int64_t(25) << 20;  ///< DDP's buckets
  bool reduce_in_bf16 = false;               ///< gradients reduced in bf16
};

/// What `dlf train` adds to the out-of-memory error: the memory flags that would fit
/// (fitting_flags_hint) and, for an eager run, whether its step compiled would
/// (compiled_fit_hint).
std::string out_of_memory_hint(const OutOfMemoryRun& run);

}  // namespace dlf::plan
