// A dlf checkpoint as one file at any path: what save_checkpoint writes in its directory, and
// what nn::save writes for one module.
#pragma once
#include <filesystem>

#include <dlf/nn/checkpoint.h>

namespace dlf::nn {

/// Writes `checkpoint` to `path`, replacing it atomically (replace_file).
void save_checkpoint_file(const std::filesystem::path& path, const Checkpoint& checkpoint);
/// Reads and verifies the checkpoint file at `path` (load_checkpoint's errors).
Checkpoint load_checkpoint_file(const std::filesystem::path& path);

}  // namespace dlf::nn
