// What the command line accepts: every number bounded, with a message that names the bound.
#pragma once
#include <CLI/CLI.hpp>

#include <cstdint>

namespace dlf::app {

/// Limits of the command line (the library's own limits where it has them).
inline constexpr int64_t kMaxPlannedDevices = 1 << 20;  ///< dlf plan
inline constexpr int64_t kMaxSteps = 1'000'000'000'000;
inline constexpr int64_t kMaxBatch = 1 << 20;  ///< sequences, images or tokens per sequence

/// A finite number greater than 0.
CLI::Validator positive();
/// A finite number, 0 or more.
CLI::Validator non_negative();
/// A whole number from `lo` to `hi`.
CLI::Validator whole(int64_t lo, int64_t hi);
/// Any text but the empty one.
CLI::Validator non_empty();
/// A size in bytes as Hugging Face's save_pretrained takes it ("2GB", "500MB", "5GiB", "100KB",
/// "4096"; decimal units and binary ones), greater than 0, rewritten as the whole number of bytes.
CLI::Validator byte_size();
/// A registered model name.
CLI::Validator model_name();

}  // namespace dlf::app
