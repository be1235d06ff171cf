// What `dlf plan` answers: per-device memory and predicted step time of a training layout, on
// meta devices; for a GPT that does not fit, what would (memory flags, and the search).
#pragma once
#include <cstdint>
#include <functional>
#include <string>

namespace dlf::plan {

/// What `dlf plan` is asked.
struct PlanRequest {
  std::string model = "gpt-small";  ///< a registered name (unless the dimensions are given)
  /// A GPT by its dimensions instead of a named model (all three, or none): its blocks, width,
  /// attention heads and vocabulary (0: GPT-2's 50257); its context is `seq` (0: 2048)
  ///@{
  int64_t layers = 0, hidden = 0, heads = 0, vocab = 0;
  ///@}
  int devices = 1;  ///< dp x tp x pp
  /// A machine by name (sim_system(): "trn1.32xlarge") and how many of it, instead of `devices`
  /// and `device`
  ///@{
  std::string system;
  int nodes = 0;
  ///@}
  int dp = 0;                            ///< 0: devices / (tp · pp)
  int tp = 1;                            ///< tensor-parallel ranks
  int pp = 1;                            ///< pipeline stages
  std::string device = "sim:a100-40gb";  ///< sim:PRESET or sim:SPEC.json
  int64_t batch = 0;  ///< the global batch; 0: dlf train's (models::default_batch)
  /// 0: as dlf train runs it (one sequence through a pipeline, else a replica's rows at once)
  int64_t micro_batch = 0;
  int64_t seq = 0;                 ///< tokens a sequence; 0: the model's
  std::string precision = "fp32";  ///< fp32, or bf16 (autocast, f32 master weights)
  std::string schedule = "1f1b";   ///< 1f1b, gpipe or interleaved
  int virtual_stages = 1;          ///< chunks of layers per pipeline rank (interleaved)
  std::string recompute = "none";  ///< none, selective or full (autograd::Recompute)
  int zero = 0;                    ///< the ZeRO stage over dp: 0 to 3
  std::string offload = "none";    ///< none, optimizer or params (plan::Offload)
  bool json = false;               ///< one JSON line instead of lines for people
  /// the memory plan of the step captured as a graph, on one device or data-parallel replicas
  bool compile = false;
};

/// Where the answer's text goes, as it comes.
using PlanOut = std::function<void(const std::string& text)>;

/// Plans `request` — a GPT's dp x tp x pp layout (plan_gpt), another family's data-parallel one
/// (plan_replica), or with `compile` the captured step (plan_compiled_stages) — and writes the
/// plan (describe(), or with `json` one JSON line) to `out`; for one that does not fit, the
/// memory flags that would (fitting_flags_hint) and, for a GPT, the fastest configuration
/// search() finds. A dlf::Error for a layout, batch or device the run cannot have.
void plan_request(PlanRequest request, const PlanOut& out);

}  // namespace dlf::plan
