#include <dlf/nn/data/png.h>

#include <png.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <vector>

namespace dlf::nn::data {

void write_png_grid(const std::string& path, const Tensor& images, int64_t columns) {
  DLF_CHECK(images.dim() == 4 && images.size(0) > 0 && (images.size(1) == 1 || images.size(1) == 3),
            "write_png_grid: expected images [N, 1 or 3, H, W], got ", shape_str(images.shape()));
  DLF_CHECK(columns > 0, "write_png_grid: columns must be positive, got ", columns);
  const int64_t n = images.size(0), c = images.size(1), h = images.size(2), w = images.size(3);
  const int64_t cols = std::min(columns, n), rows = (n + cols - 1) / cols, pad = 2;
  const int64_t width = cols * (w + pad) + pad, height = rows * (h + pad) + pad;
  const std::vector<float> values = images.to(DType::f32).to_vector<float>();
  std::vector<uint8_t> pixels(size_t(width * height * c), 0);
  for (int64_t i = 0; i < n; ++i) {
    const int64_t top = pad + (i / cols) * (h + pad), left = pad + (i % cols) * (w + pad);
    for (int64_t ch = 0; ch < c; ++ch)
      for (int64_t y = 0; y < h; ++y)
        for (int64_t x = 0; x < w; ++x) {
          const float v = values[size_t(((i * c + ch) * h + y) * w + x)];
          pixels[size_t(((top + y) * width + left + x) * c + ch)] =
              uint8_t(std::lround(std::clamp((v + 1.0f) * 127.5f, 0.0f, 255.0f)));
        }
  }
  png_image image{};
  image.version = PNG_IMAGE_VERSION;
  image.width = png_uint_32(width);
  image.height = png_uint_32(height);
  image.format = c == 1 ? PNG_FORMAT_GRAY : PNG_FORMAT_RGB;
  const std::string tmp = path + ".tmp";
  const bool ok = png_image_write_to_file(&image, tmp.c_str(), 0, pixels.data(),
                                          png_int_32(width * c), nullptr) != 0;
  const std::string message = image.message;
  png_image_free(&image);
  std::error_code renamed;
  if (ok) std::filesystem::rename(tmp, path, renamed);
  if (ok && !renamed) return;
  std::error_code ignored;
  std::filesystem::remove(tmp, ignored);
  throw Error("write_png_grid: cannot write " + path + ": " + (ok ? renamed.message() : message));
}

}  // namespace dlf::nn::data
