// `dlf train`: trains a registered model on text, with checkpoints, resume and metrics.
#pragma once
#include <optional>
#include <set>
#include <string>

#include <dlf/error.h>

#include <dlf/train/run_config.h>
#include <dlf/train/step_profiler.h>

namespace dlf::app {

using train::ProfileRequest;

struct TrainOptions {
  train::RunConfig run;
  std::string checkpoint;  ///< directory; empty: no checkpoints
  bool resume = false;     ///< continue from the checkpoint (its run config wins)
  bool overwrite = false;  ///< start anew over a checkpoint already in `checkpoint`
  std::string init_from;   ///< weights to start from (read_weights); empty: the seed's
  /// The options given on the command line ("--lr"): on resume they replace the checkpoint's
  /// (the schedule's) or are refused (what the data and the model depend on); a default
  /// --min-lr above --lr becomes --lr / 10.
  std::set<std::string> given;
  int64_t until = 0;         ///< stop (and checkpoint) after this step, as if interrupted
  std::string metrics;       ///< JSON-lines file; empty: none
  int64_t save_every = 0;    ///< steps between checkpoints (0: only at the end)
  int64_t eval_every = 0;    ///< steps between validation losses (0: only at the end)
  int64_t eval_batches = 0;  ///< 0: 4, or the whole test set for a classifier
  int64_t log_every = 10;
  int devices = 0;                ///< ranks, one per device; 0: dp x tp x pp, or 1
  int dp = 0, tp = 0, pp = 0;     ///< the layout; all 0: 1 x 1 x 1, or planned for --devices
  int64_t micro_batch = 0;        ///< sequences per micro-batch; 0: train::default_micro_batch
  std::string schedule = "1f1b";  ///< pipeline schedule: 1f1b, gpipe or interleaved
  int virtual_stages = 1;         ///< chunks of layers per pipeline rank (interleaved)
  std::string device = "auto";    ///< see parallel::setup_devices()
  std::string trace;              ///< Chrome trace of the simulated devices; empty: none
  int64_t bucket_mb = 25;         ///< DDP gradient bucket size
  int zero = 0;  ///< ZeRO stage: 0 none, 1 optimizer state sharded, 2 gradients too
  std::string recompute = "none";    ///< activation recompute: none, full or selective
  std::string offload = "none";      ///< none, optimizer or params (plan::Offload)
  std::string precision = "fp32";    ///< fp32, or bf16: matmuls, convs and attention under autocast
  std::string grad_reduce = "fp32";  ///< the dtype gradients are averaged over dp in
  bool detect_anomaly = false;       ///< name the first op that makes NaN or infinity
  bool compile = false;              ///< the whole step captured once, replayed as a graph
  int64_t check_replicas = 0;        ///< steps between replica checksums; 0: never
  std::optional<ProfileRequest> profile;  ///< `dlf profile`: rank 0's ops as a table at the end
  std::string report;  ///< a self-contained HTML report of the run (report.h); empty: none
};

/// A run stopped by SIGINT, SIGTERM or SIGHUP after saving what it could; `what()` says where.
class Interrupted : public Error {
 public:
  Interrupted(int signal, const std::string& message) : Error(message), signal_(signal) {}
  int signal() const { return signal_; }

 private:
  int signal_;
};

/// Returns the last training loss. Throws Interrupted after a SIGINT, SIGTERM or SIGHUP.
double run_train(TrainOptions options);

}  // namespace dlf::app
