#include "test_util.h"

using namespace dlf;
using dlf::test::check_close;
using dlf::test::check_error;

TEST_CASE("data: pad_images centres images in a frame") {
  const Tensor images = from_vector<float>({1, 2, 3, 4}, {1, 1, 2, 2});
  check_close(nn::data::pad_images(images, 4, -1),
              {-1, -1, -1, -1, -1, 1, 2, -1, -1, 3, 4, -1, -1, -1, -1, -1}, {1, 1, 4, 4});
  CHECK(nn::data::pad_images(zeros({2, 3, 28, 28}), 32).shape() == Shape{2, 3, 32, 32});
  check_error([] { nn::data::pad_images(zeros({1, 1, 5, 2}), 4); }, {"h, w <= 4", "[1, 1, 5, 2]"});
}
