#include <dlf/nn/data/png.h>

#include <png.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <vector>

namespace dlf::nn::data {
namespace {

// An image's bytes, row by row, `channels` to a pixel.
struct Pixels {
  int64_t width = 0, height = 0, channels = 0;
  std::vector<uint8_t> bytes;
};

// The grid at one byte per value: white gutters, tiles row by row.
Pixels tile(const Tensor& images, int64_t columns) {
  const int64_t n = images.size(0), c = images.size(1), h = images.size(2), w = images.size(3);
  const int64_t cols = std::min(columns, n), rows = (n + cols - 1) / cols, pad = 2;
  Pixels grid{cols * (w + pad) + pad, rows * (h + pad) + pad, c, {}};
  grid.bytes.assign(size_t(grid.width * grid.height * c), 255);
  const std::vector<float> values = images.to(DType::f32).to_vector<float>();
  for (int64_t i = 0; i < n; ++i) {
    const int64_t top = pad + (i / cols) * (h + pad), left = pad + (i % cols) * (w + pad);
    for (int64_t ch = 0; ch < c; ++ch)
      for (int64_t y = 0; y < h; ++y)
        for (int64_t x = 0; x < w; ++x) {
          const float v = values[size_t(((i * c + ch) * h + y) * w + x)];
          grid.bytes[size_t(((top + y) * grid.width + left + x) * c + ch)] =
              uint8_t(std::lround(std::clamp((v + 1.0f) * 127.5f, 0.0f, 255.0f)));
        }
  }
  return grid;
}

// Nearest neighbour: each pixel a scale x scale block.
Pixels enlarge(const Pixels& small, int64_t scale) {
  const int64_t c = small.channels;
  Pixels big{small.width * scale, small.height * scale, c, {}};
  big.bytes.resize(size_t(big.width * big.height * c));
  for (int64_t y = 0; y < big.height; ++y)
    for (int64_t x = 0; x < big.width; ++x)
      std::copy_n(&small.bytes[size_t(((y / scale) * small.width + x / scale) * c)], c,
                  &big.bytes[size_t((y * big.width + x) * c)]);
  return big;
}

}  // namespace

void write_png_grid(const std::string& path, const Tensor& images, int64_t columns, int64_t scale) {
  DLF_CHECK(images.dim() == 4 && images.size(0) > 0 && (images.size(1) == 1 || images.size(1) == 3),
            "write_png_grid: expected images [N, 1 or 3, H, W], got ", shape_str(images.shape()));
  DLF_CHECK(columns > 0, "write_png_grid: columns must be positive, got ", columns);
  DLF_CHECK(scale > 0, "write_png_grid: scale must be positive, got ", scale);
  const Pixels pixels = enlarge(tile(images, columns), scale);
  png_image image{};
  image.version = PNG_IMAGE_VERSION;
  image.width = png_uint_32(pixels.width);
  image.height = png_uint_32(pixels.height);
  image.format = pixels.channels == 1 ? PNG_FORMAT_GRAY : PNG_FORMAT_RGB;
  const std::string tmp = path + ".tmp";
  const bool ok = png_image_write_to_file(&image, tmp.c_str(), 0, pixels.bytes.data(),
                                          png_int_32(pixels.width * pixels.channels), nullptr) != 0;
  const std::string message = image.message;
  png_image_free(&image);
  std::error_code renamed;
  if (ok) std::filesystem::rename(tmp, path, renamed);
  if (ok && !renamed) return;
  std::error_code ignored;
  std::filesystem::remove(tmp, ignored);
  throw Error("write_png_grid: cannot write " + path + ": " + (ok ? renamed.message() : message));
}

int64_t readable_png_scale(int64_t height, int64_t width) {
  constexpr int64_t kReadable = 112;  // pixels on the longer side
  const int64_t side = std::max<int64_t>(std::max(height, width), 1);
  return (kReadable + side - 1) / side;
}

}  // namespace dlf::nn::data
