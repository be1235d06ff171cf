// Image transforms for data pipelines.
#pragma once
#include <cstdint>

#include <dlf/core/tensor.h>

namespace dlf::nn::data {

/// Images [N, C, h, w] centred in a size x size frame of `fill` (h, w <= size; an odd margin
/// puts the extra row or column after the image): Fashion-MNIST's 28 x 28 -> 32 x 32.
Tensor pad_images(const Tensor& images, int64_t size, double fill = 0);

}  // namespace dlf::nn::data
