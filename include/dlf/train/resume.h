// Continuing a run from its checkpoint: which run it is (the checkpoint's, with the schedule
// the command line gives again), whether its optimizer state belongs to its model, and the disk
// room its saves need.
#pragma once
#include <cstdint>
#include <set>
#include <string>

#include <dlf/nn/checkpoint.h>
#include <dlf/train/run_config.h>

namespace dlf::train {

/// The run a resumed `ckpt` (read from `dir`) continues: the checkpoint's, but for the schedule
/// the command line gives again (`given` names the flags: "--steps", "--lr", "--min-lr",
/// "--warmup", "--weight-decay", "--clip"), whose new values in `asked` replace the old, each
/// change said on stderr. A dlf::Error when a given --model, --batch, --seq, --seed or --data
/// differs from the checkpoint's (what the data and the model depend on), or when the run's
/// steps are already done.
RunConfig resumed_config(const nn::Checkpoint& ckpt, const std::string& dir, const RunConfig& asked,
                         const std::set<std::string>& given);

/// A dlf::Error unless every optimizer state tensor of `ckpt` (read from `dir`) belongs to a
/// tensor of its model ("<name>.exp_avg") with that tensor's shape, and "step" is one number.
void check_optimizer_state(const nn::Checkpoint& ckpt, const std::string& dir);

/// The free bytes a run's saves into `dir` need: a checkpoint holds the f32 weights and AdamW's
/// two moments (12 bytes a parameter, and HDF5's own under a MiB), and each save writes a new
/// one beside the last (dir/checkpoint.h5, if any) before it replaces it.
uint64_t checkpoint_room(const std::string& dir, int64_t parameters);

}  // namespace dlf::train
