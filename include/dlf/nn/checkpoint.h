// Checkpoints: one HDF5 file per run directory (DIR/checkpoint.h5) holding the model's tensors
// by state_dict name, the optimizer state, the step, the RNG state and the run config.
#pragma once
#include <string>

#include <dlf/nn/module.h>

namespace dlf::nn {

/// What a checkpoint holds.
struct Checkpoint {
  NamedTensors model = {};      ///< Module::state_dict()
  NamedTensors optimizer = {};  ///< Optimizer::state_dict() (may be empty)
  int64_t step = 0;             ///< training steps done
  /// the default generator's state
  ///@{
  uint64_t rng_seed = 0, rng_offset = 0;
  ///@}
  std::string config = {};  ///< the run config, as JSON text
};

/// Writes DIR/checkpoint.h5 (creating DIR) through a temporary file that is flushed and then
/// renamed over the old one: a crash or an error mid-save leaves the previous checkpoint whole.
/// Tensors saved under several names (tied weights) are stored once and linked.
void save_checkpoint(const std::string& dir, const Checkpoint& checkpoint);
/// Reads DIR/checkpoint.h5; a dlf::Error names the file and what is wrong with it (missing,
/// not a dlf checkpoint, truncated or corrupt, and which tensor could not be read).
Checkpoint load_checkpoint(const std::string& dir);
bool checkpoint_exists(const std::string& dir);  ///< whether DIR/checkpoint.h5 exists
/// Every dataset of a plain HDF5 file (h5py's, say) as a tensor, named by its path with '.'
/// for '/' ("transformer/h/0/ln_1/weight" -> "transformer.h.0.ln_1.weight"), in name order:
/// floats as f32 (f64 if stored so), integers as i64. For weights from elsewhere; a dlf
/// checkpoint is read (and verified) by load_checkpoint.
NamedTensors read_hdf5_tensors(const std::string& path);
/// Loads the checkpoint's model tensors into `module`: a missing or unexpected name or a wrong
/// shape is a dlf::Error naming the tensor, and then nothing in the module has changed.
void restore_module(Module& module, const Checkpoint& checkpoint);

}  // namespace dlf::nn
