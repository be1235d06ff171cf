// A training run on one rank, the same for every model family and layout: batches from the
// family's task, the rank's step (RankStep), AdamW's warmup-then-cosine schedule, progress and
// metrics, evaluations, checkpoints of the whole state, NaN guards and stops on request. Every
// rank of the world runs it (SPMD); the lead rank (world rank 0) logs and saves.
#pragma once
#include <cstdint>
#include <functional>
#include <iosfwd>
#include <string>
#include <vector>

#include <dlf/nn/checkpoint.h>
#include <dlf/train/rank_step.h>
#include <dlf/train/run_config.h>

namespace dlf::train {

/// A step's figures on the simulated devices, the worst over the ranks: the step's time, the
/// data-parallel group's collectives (busy, and exposed beyond compute), the peak, the bytes
/// sent.
struct SimStep {
  double seconds = 0;               ///< the step's simulated time
  double comm_seconds = 0;          ///< the data-parallel collectives' busy time
  double exposed_comm_seconds = 0;  ///< the part of it compute did not hide
  double peak_bytes = 0;            ///< the device's peak over the step
  double comm_bytes = 0;            ///< bytes the rank sent
};

/// What the lead rank reports of a step.
struct StepFigures {
  int64_t step = 0;        ///< 0-based
  double loss = 0;         ///< the global batch's mean
  double lr = 0;           ///< the step's learning rate
  double grad_norm = 0;    ///< before clipping
  double seconds = 0;      ///< wall clock
  double items_per_s = 0;  ///< of the family's unit (tokens, images), by the wall clock
  bool simulated = false;  ///< `sim` holds the simulated devices' figures
  SimStep sim = {};        ///< when simulated
};

/// What the lead rank's caller may watch (each may be empty).
struct TrainHooks {
  /// Before step `step` (0-based) begins.
  std::function<void(int64_t step)> begin_step = {};
  /// After a step.
  std::function<void(const StepFigures& figures)> end_step = {};
  /// After an evaluation at step `step` (1-based: steps done).
  std::function<void(int64_t step, const models::Evaluation& e)> evaluated = {};
  /// When the run ends, finished or stopped early (`stopped`): the run's layout in words.
  std::function<void(const std::string& layout, bool stopped)> ended = {};
};

/// One run (see above).
struct TrainJob {
  RunConfig run;                 ///< its batch, sequence and schedule resolved
  const models::Family& family;  ///< of run.model
  parallel::Layout layout = {};  ///< the mesh
  /// sequences a micro-batch (a pipeline family's); 0: default_micro_batch
  int64_t micro_batch = 0;
  /// how each rank's part of the model runs (its micro-batches follow from micro_batch)
  PartOptions part = {};
  /// the optimizer state and update in host memory (ZeRO-Offload)
  bool offload_optimizer = false;
  DType precision = DType::f32;            ///< bf16: the steps under autocast
  const models::TrainData& data;           ///< loaded once, shared by the ranks
  const nn::NamedTensors& initial;         ///< the whole model to start from
  const nn::Checkpoint* resume = nullptr;  ///< continue from this, or null
  int64_t parameters = 0;                  ///< the whole model's, for the header and the metrics
  std::string checkpoint = {};             ///< directory to save to; empty: none
  int64_t until = 0;                       ///< stop (and save) after this step; 0: run.steps
  int64_t save_every = 0;                  ///< steps between checkpoints (0: at the end only)
  int64_t eval_every = 0;                  ///< steps between evaluations (0: at the end only)
  int64_t eval_batches = 0;    ///< held-out batches an evaluation; 0: the family's default
  int64_t log_every = 10;      ///< steps between progress lines when not on a terminal
  int64_t check_replicas = 0;  ///< steps between replica checksums; 0: never
  bool evaluate = true;        ///< evaluate at the end (and every eval_every steps)
  bool say_unsaved = true;     ///< the header says when nothing will be saved
  /// what every rank's command line must agree on (ranks started apart, under MPI)
  std::string agreement = {};
  std::ostream* metrics = nullptr;  ///< the lead's JSON-lines metrics; null: none
  std::string metrics_path = {};    ///< its file's name, for errors
  /// every op's output checked, forward and backward; the first NaN or infinity named
  bool detect_anomaly = false;
  /// The signal that asks the run to stop after this step (0: none), polled each step.
  std::function<int()> stop_requested = {};
  TrainHooks hooks = {};  ///< what the lead rank's caller watches
};

/// What a rank's run came to.
struct TrainResult {
  double loss = 0;    ///< the last step's
  int64_t steps = 0;  ///< the run stands after this step
};

/// Runs `job` on this rank of `world` (see above). A NaN loss or gradient norm stops it with a
/// dlf::Error before the update; non-finite weights are never saved.
TrainResult train_rank(parallel::Communicator& world, const TrainJob& job);

/// A dlf::Error for a job its devices (of `device` type) cannot run: a compiled step with an
/// offloaded ZeRO-2/3 update, offload on the cpu device, replica checks under ZeRO-3, a batch
/// that does not split over dp or into micro-batches, micro-batches of a family without them.
void check_job(const TrainJob& job, DeviceType device);

/// Runs `job` on every rank (check_job() first): one thread a device of `devices`, or, in a
/// process mpirun started, this process's rank on its device of them. Returns world rank 0's
/// result (a default one in the other processes under MPI).
TrainResult train_ranks(const std::vector<Device>& devices, const TrainJob& job);

/// "dp 2 x tp 1 x pp 2".
std::string layout_text(const parallel::Layout& layout);
/// layout_text() and, with a pipeline or several micro-batches, how the replica's rows go
/// through it: "dp 1 x tp 1 x pp 2, 4 micro-batches of 2 (1F1B)".
std::string describe_layout(const parallel::Layout& layout, int micro_batches, int64_t micro_batch,
                            parallel::PipelineSchedule schedule, int virtual_stages);

/// The warmup steps of a run: its own, else 5 % of its steps (at least 1, below the steps).
int64_t warmup_steps(const RunConfig& run);

/// Sequences per micro-batch when none is asked for: with a pipeline 1 (the most micro-batches,
/// the smallest bubble), without one the replica's whole share of the batch.
int64_t default_micro_batch(const parallel::Layout& layout, int64_t global_batch);

}  // namespace dlf::train
