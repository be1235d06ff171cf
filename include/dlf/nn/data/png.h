// PNG output (libpng): a grid of images, as torchvision's save_image lays it out.
#pragma once
#include <cstdint>
#include <string>

#include <dlf/core/tensor.h>

namespace dlf::nn::data {

/// Writes images [N, C, H, W] (C = 1: grey, C = 3: RGB) with values in [-1, 1] (clamped) as
/// one PNG of ceil(N / columns) rows of `columns` tiles, 2 black pixels between tiles and
/// around them: (columns·(W+2)+2) x (rows·(H+2)+2) pixels, a value v at byte round((v+1)·127.5).
/// Written through a temporary file renamed over `path`; a dlf::Error names the file on failure.
void write_png_grid(const std::string& path, const Tensor& images, int64_t columns);

}  // namespace dlf::nn::data
