// PNG output (libpng): a grid of images, as torchvision's save_image lays it out.
#pragma once
#include <cstdint>
#include <string>

#include <dlf/core/tensor.h>

namespace dlf::nn::data {

/// Writes images [N, C, H, W] (C = 1: grey, C = 3: RGB) with values in [-1, 1] (clamped) as
/// one PNG of ceil(N / columns) rows of `columns` tiles, 2 white pixels between tiles and
/// around them (torchvision's make_grid with pad_value 1: a gutter that shows against dark
/// backgrounds), a value v at byte round((v+1)·127.5); the whole grid then enlarged `scale`
/// times by nearest neighbour (each pixel a scale x scale block): scale·(columns·(W+2)+2) x
/// scale·(rows·(H+2)+2) pixels. Written through a temporary file renamed over `path`; a
/// dlf::Error names the file on failure.
void write_png_grid(const std::string& path, const Tensor& images, int64_t columns,
                    int64_t scale = 1);

/// The smallest whole enlargement at which an image of `height` x `width` pixels is at least
/// 112 pixels on its longer side, big enough to see on a screen: 4 for Fashion-MNIST's 28 x 28,
/// 1 for 112 and more.
int64_t readable_png_scale(int64_t height, int64_t width);

}  // namespace dlf::nn::data
