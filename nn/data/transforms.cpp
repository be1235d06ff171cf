#include <dlf/core/factory.h>
#include <dlf/nn/data/transforms.h>

namespace dlf::nn::data {

Tensor pad_images(const Tensor& images, int64_t size, double fill) {
  DLF_CHECK(images.dim() == 4 && images.size(2) <= size && images.size(3) <= size,
            "pad_images: expected images [N, C, h, w] with h, w <= ", size, ", got ",
            shape_str(images.shape()));
  const int64_t h = images.size(2), w = images.size(3), top = (size - h) / 2, left = (size - w) / 2;
  Tensor out = full({images.size(0), images.size(1), size, size}, fill,
                    {.dtype = images.dtype(), .device = images.device()});
  out.narrow(2, top, h).narrow(3, left, w).copy_(images);
  return out;
}

}  // namespace dlf::nn::data
