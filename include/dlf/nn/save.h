// One module's state in one file, in one call (libtorch's torch::save / torch::load).
#pragma once
#include <string>

#include <dlf/nn/module.h>

namespace dlf::nn {

/// Writes module.state_dict() to `path`, replacing the file atomically (a failed save leaves
/// the previous one whole): safetensors when `path` ends in ".safetensors", else a dlf HDF5
/// checkpoint (".h5" or ".hdf5": the model tensors of the format nn::load_checkpoint reads,
/// step 0). Another extension is a dlf::Error naming the two.
void save(const Module& module, const std::string& path);
/// Loads what save() wrote into `module` (also a .safetensors file from elsewhere, or dlf
/// train's DIR/checkpoint.h5): every tensor must be there with its shape and no other, else a
/// dlf::Error names the file and the tensor, and nothing in the module has changed.
void load(Module& module, const std::string& path);

}  // namespace dlf::nn
