#include <dlf/core/safetensors.h>
#include <dlf/nn/save.h>

#include <filesystem>

#include "checkpoint_file.h"

namespace dlf::nn {
namespace {

enum class Format { hdf5, safetensors };

Format format_of(const std::string& path, const char* call) {
  const std::string ext = std::filesystem::path(path).extension().string();
  if (ext == ".safetensors") return Format::safetensors;
  DLF_CHECK(ext == ".h5" || ext == ".hdf5", call, "('", path,
            "'): name the file .h5 (a dlf HDF5 checkpoint) or .safetensors");
  return Format::hdf5;
}

}  // namespace

void save(const Module& module, const std::string& path) {
  if (format_of(path, "nn::save") == Format::safetensors) {
    save_safetensors(path, module.state_dict());
  } else {
    save_checkpoint_file(path, {.model = module.state_dict()});
  }
}

void load(Module& module, const std::string& path) {
  const NamedTensors state = format_of(path, "nn::load") == Format::safetensors
                                 ? load_safetensors(path).tensors
                                 : load_checkpoint_file(path).model;
  try {
    module.load_state_dict(state);
  } catch (const OutOfMemory&) {
    throw;  // the device's, not the file's
  } catch (const Error& e) {
    throw Error(path + ": " + e.what());
  }
}

}  // namespace dlf::nn
