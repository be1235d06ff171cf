// Where a planned step's time goes: the seconds of the busiest stage's compute by op class
// (recomputation apart), the communication of tp, the pipeline and dp that the compute stream
// waited for, the pipeline's fill and drain and the optimizer — each taken from the stage's run
// on the meta device's clock, so that the parts sum to the step — and the one line that says
// what limits it.
#pragma once
#include <array>
#include <cstdint>
#include <string>

#include <dlf/device/sim_spec.h>
#include <dlf/json_line.h>

namespace dlf::plan {

/// A part of a step's time.
enum class StepPart : uint8_t {
  matmul,          ///< matmuls and linear layers (and convolutions)
  attention,       ///< attention's kernels, forward and backward
  normalisation,   ///< layer and RMS norms
  elementwise,     ///< element-wise kernels, softmax, reductions, copies
  embedding_loss,  ///< the embedding and the loss (cross-entropy)
  other_compute,   ///< the rest the device computes (gradient clipping's updates, ...)
  recompute,       ///< the forward ops backward runs again (activation recompute)
  tp_comm,         ///< tensor-parallel collectives the compute waited for
  pp_p2p,          ///< pipeline sends and receives, and the tied embedding's gradient,
                   ///< the compute waited for
  bubble,          ///< the pipeline's fill and drain
  dp_comm,         ///< data-parallel collectives the compute waited for (ZeRO's included)
  optimizer,       ///< the optimizer step
};
inline constexpr int kStepParts = 12;  ///< how many StepPart values there are
/// "matmul", "attention", "normalisation", "element-wise", "embedding+loss", "other compute",
/// "recompute", "tp comm", "pipeline comm", "bubble", "dp comm", "optimizer"
const char* step_part_name(StepPart part);
/// Whether the part is the device's compute (matmul to recompute).
inline bool is_compute(StepPart part) { return part <= StepPart::recompute; }

/// A step's seconds by part, and which links its communication crosses.
struct StepBreakdown {
  std::array<double, kStepParts> seconds{};  ///< per StepPart
  /// FLOPs and bytes of each compute part (its ops' cost formulas), for how near its peak it ran
  ///@{
  std::array<double, kStepParts> flops{}, bytes{};
  ///@}
  /// The links tp's, the pipeline's and dp's collectives cross (SimSpec::interconnect_name or
  /// network_name), and whether that is the network between nodes
  ///@{
  std::string tp_link, pp_link, dp_link;
  bool tp_network = false, pp_network = false, dp_network = false;
  ///@}
  double total() const;      ///< the parts' sum: the step
  StepPart largest() const;  ///< the part of the most seconds
  double at(StepPart part) const { return seconds[static_cast<size_t>(part)]; }  ///< its seconds
};

/// The link a group of `size` ranks `stride` apart (parallel::Mesh's order: tp innermost, then
/// pp, then dp) crosses on devices of `spec`: the network when its ranks span nodes.
std::string link_crossed(const SimSpec& spec, int stride, int size, bool* network = nullptr);

struct Plan;
/// A compact table: each part's milliseconds and share of the step, largest first (parts of
/// no time left out), communication with the link it crosses.
std::string describe_breakdown(const Plan& plan);
/// The one line a performance engineer wants: "limited by matmul compute: 62 % of the step at
/// 71 % of peak", "limited by dp's communication over EFA (100 GB/s a node): 31 % of the step".
std::string limit_line(const Plan& plan);
/// "<part>_ms" for every part, "limited_by" and "limited_share".
void add_breakdown_fields(JsonLine& line, const Plan& plan);

}  // namespace dlf::plan
