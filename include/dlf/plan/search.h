// The fastest configuration of a GPT run that fits its devices, searched over the dp x tp x pp
// layouts, the memory flags (--recompute, --zero, --offload) and the micro-batch together:
// what `dlf plan` names when the layout asked for does not fit.
#pragma once
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <dlf/plan/plan.h>

namespace dlf::plan {

/// The run: model, spec, global batch (set), sequence, dtype, schedule and virtual stages.
/// Its layout, micro-batch, recompute, ZeRO stage and offload are what is searched.
struct SearchOptions {
  PlanOptions run;  ///< the run as planned; its layout and memory flags are ignored
  int devices = 1;  ///< devices the layouts use
  /// Whether a configuration may be chosen (e.g. it keeps the memory flags a user gave); empty:
  /// every one. The others are neither planned nor counted.
  std::function<bool(const PlanOptions&)> allowed = {};
  /// The share of a device's memory a plan may fill to fit: below 1 leaves room for a run whose
  /// peak comes out above its plan's.
  double memory_share = 1;
  /// Host memory a plan's host side must fit in to be chosen (host_fits); 0: not checked.
  double host_available = 0;
};

/// What the search found.
struct SearchResult {
  std::optional<Plan> best;  ///< the fastest that fits, if any does
  Plan least;                ///< of those planned, the smallest peak (when none fits)
  int64_t candidates = 0;    ///< configurations in the space (configurations(), allowed)
  int64_t planned = 0;       ///< of them planned; the others pruned by memory bounds
  int64_t stage_runs = 0;    ///< stage runs on the meta device (StageCache)
};

/// Every configuration of the run: each dp x tp x pp of the devices that divides the model and
/// the batch, each micro-batch that divides a replica's rows (and that the schedule can run),
/// recompute none, selective or full, ZeRO 0 to 3 (with dp > 1), offload none, optimizer, or
/// params (with ZeRO-3); those `allowed` keeps.
std::vector<PlanOptions> configurations(const SearchOptions& options);

/// Whether plan `a` is preferred to `b`: one that fits first; of those the faster, of the
/// others the smaller peak; ties by the fewer memory-saving features, then by less tp, less
/// pp and the larger micro-batch.
bool better(const Plan& a, const Plan& b);

/// The best of configurations() that fits (in memory_share of the devices and, if given, the
/// host's memory) by better(), planned with one StageCache. A dlf::Error when no layout divides
/// the model and the batch. A layout's
/// configurations are planned from the most memory-saving (full recompute, the smallest
/// micro-batch) on, every ZeRO stage and offload of each: a peak only grows with less
/// recompute and larger micro-batches, so the first that fits nowhere bounds the rest from
/// below and they are not planned (the micro-batch of the whole replica, whose gradients need
/// no accumulating, is planned on its own). The configurations are planned as estimates
/// (PlanOptions::estimate); the best of those that fit is planned with its whole stages, and
/// the next best while that does not fit: best and least are whole plans.
SearchResult search(const SearchOptions& options);

/// "--tp 8 --pp 64 --recompute full --micro-batch 1": dlf plan's flags for the plan's layout,
/// memory flags and micro-batch.
std::string configuration_flags(const Plan& plan);

}  // namespace dlf::plan
