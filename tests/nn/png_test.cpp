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
  // Three 2x3 images in 2 columns: 2 rows of tiles, 2-pixel black gaps.
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
  CHECK(at(0, 0) == 0);
  CHECK(at(2, 2) == 0);                         // image 0, first pixel: -1
  CHECK(at(2, 3) == std::lround(127.5 / 8.5));  // value -1 + 1/8.5
  CHECK(at(3, 4) == std::lround(5 * 127.5 / 8.5));
  CHECK(at(2, 7) == std::lround(6 * 127.5 / 8.5));  // image 1, first pixel
  CHECK(at(7, 4) == 255);                           // image 2, last pixel: 1
  CHECK(at(6, 9) == 0);                             // no image 3: black
  fs::remove(path);
}

TEST_CASE("png: RGB, clamping, and errors leave no file behind") {
  const Tensor images = from_vector<float>({-3, 0, 3}, {1, 3, 1, 1});  // one pixel, R G B
  const fs::path path = temp("rgb.png");
  nn::data::write_png_grid(path.string(), images, 4);
  const Read png = read_png(path);
  CHECK(png.width == 5);
  CHECK(png.height == 5);
  CHECK(png.format == PNG_FORMAT_RGB);
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
  CHECK(!fs::exists(path));
  CHECK(!fs::exists(path.string() + ".tmp"));
}
