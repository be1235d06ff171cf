#include "test_util.h"

#include <png.h>
#include <unistd.h>

#include <filesystem>

using namespace dlf;
using dlf::test::check_error;
namespace fs = std::filesystem;

namespace {

fs::path temp(const std::string& name) {
  return fs::temp_directory_path() / ("dlf_png_" + std::to_string(::getpid()) + "_" + name);
}

struct Read {
  png_uint_32 width = 0, height = 0, format = 0;
  std::vector<uint8_t> pixels;
};

// Read back with libpng, in the file's own format.
Read read_png(const fs::path& path) {
  png_image image{};
  image.version = PNG_IMAGE_VERSION;
  REQUIRE(png_image_begin_read_from_file(&image, path.c_str()) != 0);
  Read out{image.width, image.height, image.format, {}};
  out.pixels.resize(PNG_IMAGE_SIZE(image));
  REQUIRE(png_image_finish_read(&image, nullptr, out.pixels.data(), 0, nullptr) != 0);
  return out;
}

}  // namespace

TEST_CASE("png: a grey grid is written with its border and read back by libpng") {
  // Three 2x3 images in 2 columns: 2 rows of tiles, 2-pixel white gutters.
  std::vector<float> values(18);
  for (size_t i = 0; i < values.size(); ++i) values[i] = -1.0f + float(i) / 8.5f;  // -1 .. 1
  const Tensor images = from_vector(values, {3, 1, 2, 3});
  const fs::path path = temp("grey.png");
  nn::data::write_png_grid(path.string(), images, 2);
  const Read png = read_png(path);
  CHECK(png.width == 2 * (3 + 2) + 2);
  CHECK(png.height == 2 * (2 + 2) + 2);
  CHECK(png.format == PNG_FORMAT_GRAY);
  auto at = [&](int y, int x) { return int(png.pixels[size_t(y * 12 + x)]); };
  CHECK(at(0, 0) == 255);
  CHECK(at(2, 2) == 0);                         // image 0, first pixel: -1
  CHECK(at(2, 3) == std::lround(127.5 / 8.5));  // value -1 + 1/8.5
  CHECK(at(3, 4) == std::lround(5 * 127.5 / 8.5));
  CHECK(at(2, 7) == std::lround(6 * 127.5 / 8.5));  // image 1, first pixel
  CHECK(at(7, 4) == 255);                           // image 2, last pixel: 1
  CHECK(at(6, 9) == 255);                           // no image 3: the gutter's white
  fs::remove(path);
}

TEST_CASE("png: an enlarged grid makes each pixel a block, the gutters too") {
  // Two 2x2 images in 2 columns at 3x: (2·(2+2)+2)·3 = 30 by (2+2+2)·3 = 18 pixels.
  const Tensor images = from_vector<float>({-1, -0.5, 0, 0.5, 1, 0.25, -0.25, -0.75}, {2, 1, 2, 2});
  const fs::path path = temp("enlarged.png");
  nn::data::write_png_grid(path.string(), images, 2, 3);
  const Read png = read_png(path);
  CHECK(png.width == 30);
  CHECK(png.height == 18);
  // The 1x grid's pixel (y, x) is the block of rows 3y..3y+2, columns 3x..3x+2.
  auto block = [&](int y, int x) {
    std::vector<int> values;
    for (int dy = 0; dy < 3; ++dy)
      for (int dx = 0; dx < 3; ++dx)
        values.push_back(png.pixels[size_t((3 * y + dy) * 30 + 3 * x + dx)]);
    return values;
  };
  auto all = [](int v) { return std::vector<int>(9, v); };
  CHECK(block(0, 0) == all(255));  // the gutter, 6 pixels wide
  CHECK(block(1, 1) == all(255));
  CHECK(block(2, 2) == all(0));    // image 0: -1
  CHECK(block(2, 3) == all(64));   // -0.5: round(63.75)
  CHECK(block(3, 2) == all(128));  // 0: round(127.5)
  CHECK(block(3, 3) == all(191));  // 0.5: round(191.25)
  CHECK(block(2, 4) == all(255));  // the gutter between the images
  CHECK(block(2, 6) == all(255));  // image 1: 1
  CHECK(block(2, 7) == all(159));  // 0.25: round(159.375)
  CHECK(block(3, 6) == all(96));   // -0.25: round(95.625)
  CHECK(block(3, 7) == all(32));   // -0.75: round(31.875)
  CHECK(block(5, 9) == all(255));
  fs::remove(path);

  // Fashion-MNIST's 28 x 28 samples are shown at 4x: 112 pixels.
  CHECK(nn::data::readable_png_scale(28, 28) == 4);
  CHECK(nn::data::readable_png_scale(32, 32) == 4);
  CHECK(nn::data::readable_png_scale(28, 56) == 2);
  CHECK(nn::data::readable_png_scale(64, 64) == 2);
  CHECK(nn::data::readable_png_scale(112, 112) == 1);
  CHECK(nn::data::readable_png_scale(256, 256) == 1);
}

TEST_CASE("png: RGB, clamping, and errors leave no file behind") {
  const Tensor images = from_vector<float>({-3, 0, 3}, {1, 3, 1, 1});  // one pixel, R G B
  const fs::path path = temp("rgb.png");
  nn::data::write_png_grid(path.string(), images, 4);
  const Read png = read_png(path);
  CHECK(png.width == 5);
  CHECK(png.height == 5);
  CHECK(png.format == PNG_FORMAT_RGB);
  CHECK(std::vector<int>{png.pixels[0], png.pixels[1], png.pixels[2]} ==
        std::vector<int>{255, 255, 255});  // the gutter
  const size_t centre = (2 * 5 + 2) * 3;
  CHECK(std::vector<int>{png.pixels[centre], png.pixels[centre + 1], png.pixels[centre + 2]} ==
        std::vector<int>{0, 128, 255});
  fs::remove(path);

  check_error(
      [] {
        nn::data::write_png_grid("/nonexistent-dir/x.png", zeros({1, 1, 2, 2}), 1);
      },
      {"cannot write /nonexistent-dir/x.png"});
  check_error(
      [&] {
        nn::data::write_png_grid(path.string(), zeros({1, 2, 2, 2}), 1);
      },
      {"[N, 1 or 3, H, W]", "[1, 2, 2, 2]"});
  check_error(
      [&] {
        nn::data::write_png_grid(path.string(), zeros({1, 1, 2, 2}), 0);
      },
      {"columns"});
  check_error(
      [&] {
        nn::data::write_png_grid(path.string(), zeros({1, 1, 2, 2}), 1, 0);
      },
      {"scale must be positive"});
  CHECK(!fs::exists(path));
  CHECK(!fs::exists(path.string() + ".tmp"));
}
