// `dlf plan`: per-device memory and predicted step time of a training layout, on meta devices.
#pragma once
#include <string>

namespace dlf::app {

struct PlanCommand {
  std::string model = "gpt-small";
  /// A GPT by its dimensions instead of a named model (all three, or none); --vocab defaults
  /// to GPT-2's 50257 and --seq, its context, to 2048
  ///@{
  int64_t layers = 0, hidden = 0, heads = 0, vocab = 0;
  ///@}
  int devices = 1;
  int dp = 0, tp = 1, pp = 1;  ///< dp 0: devices / (tp · pp)
  std::string device = "sim:a100-40gb";
  /// batch 0: dlf train's (models::default_batch); micro_batch 0: as dlf train runs it (one
  /// sequence through a pipeline, else a replica's rows at once)
  int64_t batch = 0, micro_batch = 0, seq = 0;
  std::string precision = "fp32";  ///< fp32, or bf16 (autocast, f32 master weights)
  std::string schedule = "1f1b";   ///< 1f1b, gpipe or interleaved
  int virtual_stages = 1;          ///< chunks of layers per pipeline rank (interleaved)
  std::string recompute = "none";
  int zero = 0;
  std::string offload = "none";  ///< none, optimizer or params (plan::Offload)
  bool json = false;
  /// the memory plan of the step captured as a graph, on one device or data-parallel replicas
  bool compile = false;
};

void run_plan(PlanCommand command);

}  // namespace dlf::app
