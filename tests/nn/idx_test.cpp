#include "test_util.h"

#include <zlib.h>

#include <dlf/nn/data/idx.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <numeric>

using namespace dlf;
using dlf::test::check_close;
using dlf::test::check_error;
namespace fs = std::filesystem;

namespace {

const std::string kHeader2x3 = std::string("\0\0\x08\x02\0\0\0\x02\0\0\0\x03", 12);

fs::path temp(const std::string& name) {
  return fs::temp_directory_path() / ("dlf_idx_" + std::to_string(::getpid()) + "_" + name);
}

}  // namespace

TEST_CASE("data: IDX files are read plain or gzip'd; bad ones are refused by name") {
  const std::string body = "\x01\x02\x03\x04\x05\xff";
  const fs::path plain = temp("plain.idx"), packed = temp("packed.idx.gz"),
                 shortfile = temp("short.idx"), wrong = temp("wrong.idx");
  std::ofstream(plain, std::ios::binary) << kHeader2x3 << body;
  gzFile gz = gzopen(packed.c_str(), "wb");
  const std::string whole = kHeader2x3 + body;
  gzwrite(gz, whole.data(), unsigned(whole.size()));
  gzclose(gz);
  std::ofstream(shortfile, std::ios::binary) << kHeader2x3 << "\x01\x02";
  std::ofstream(wrong, std::ios::binary) << std::string("\0\0\x0d\x01\0\0\0\x01", 8) << "abcd";

  for (const fs::path& p : {plain, packed}) {
    const nn::data::IdxArray a = nn::data::read_idx(p.string());
    CHECK(a.shape == std::vector<int64_t>{2, 3});
    CHECK(a.data == std::vector<uint8_t>{1, 2, 3, 4, 5, 255});
  }
  check_error([&] { nn::data::read_idx(shortfile.string()); },
              {shortfile.filename().string(), "truncated", "6 bytes"});
  check_error([&] { nn::data::read_idx(wrong.string()); },
              {wrong.filename().string(), "unsigned-byte IDX header"});
  check_error([] { nn::data::read_idx("/no/such.idx"); }, {"/no/such.idx", "does not exist"});
  for (const fs::path& p : {plain, packed, shortfile, wrong}) fs::remove(p);
}

TEST_CASE("data: Fashion-MNIST's test set from Debian's package") {
  const nn::data::ImageDataset test = nn::data::load_fashion_mnist(false);
  CHECK(test.images.shape() == Shape{10000, 1, 28, 28});
  CHECK(test.labels.shape() == Shape{10000});
  const std::vector<int64_t> labels = test.labels.to_vector<int64_t>();
  CHECK(std::vector<int64_t>(labels.begin(), labels.begin() + 5) ==
        std::vector<int64_t>{9, 2, 1, 1, 6});  // ankle boot, pullover, trouser, trouser, shirt
  for (int64_t c = 0; c < 10; ++c) CHECK(std::count(labels.begin(), labels.end(), c) == 1000);
  CHECK(-max(-test.images).item<double>() == 0);
  CHECK(max(test.images).item<double>() == 1);
  // Row 14 of the first image, as the file stores it (bytes / 255).
  const std::vector<double> row =
      test.images.select(0, 0).select(0, 0).select(0, 14).to_vector<double>();
  CHECK(row[6] == doctest::Approx(2 / 255.0));
  CHECK(row[12] == doctest::Approx(0x62 / 255.0));

  const std::vector<int64_t> order = nn::data::shuffled_indices(10000, 3, 1);
  std::vector<int64_t> sorted = order;
  std::sort(sorted.begin(), sorted.end());
  std::vector<int64_t> identity(10000);
  std::iota(identity.begin(), identity.end(), 0);
  CHECK(sorted == identity);
  CHECK(order == nn::data::shuffled_indices(10000, 3, 1));
  CHECK(order != nn::data::shuffled_indices(10000, 3, 2));
  const nn::data::ImageDataset b = nn::data::batch_of(test, {order[0], order[1]});
  CHECK(b.images.shape() == Shape{2, 1, 28, 28});
  CHECK(b.labels.to_vector<int64_t>() ==
        std::vector<int64_t>{labels[size_t(order[0])], labels[size_t(order[1])]});
  check_error([&] { nn::data::batch_of(test, {10000}); }, {"10000", "outside"});
}

TEST_CASE("data: normalized images and seeded shuffled batches") {
  // Four one-pixel images whose pixel is the label / 4; Fashion-MNIST's mean and std.
  const nn::data::ImageDataset data{from_vector<float>({0, 0.25f, 0.5f, 1}, {4, 1, 1, 1}),
                                    from_vector<int64_t>({0, 1, 2, 4})};
  const nn::data::ImageDataset norm = nn::data::normalized(data);
  check_close(norm.images, {-0.286 / 0.353, -0.036 / 0.353, 0.214 / 0.353, 0.714 / 0.353},
              {4, 1, 1, 1}, 1e-6);
  CHECK(norm.labels.to_vector<int64_t>() == data.labels.to_vector<int64_t>());
  check_close(nn::data::normalized(data, 0.5, 0.25).images, {-2, -1, 0, 2}, {4, 1, 1, 1});
  check_error([&] { nn::data::normalized(data, 0, 0); }, {"standard deviation", "0"});

  // Batches of 3 out of 4: one per epoch (the 4th example of each epoch's order left out).
  for (int64_t step = 0; step < 3; ++step) {
    const std::vector<int64_t> order = nn::data::shuffled_indices(4, 9, step);
    const nn::data::ImageDataset b = nn::data::shuffled_batch(data, step, 3, 9);
    const std::vector<int64_t> want = {data.labels.to_vector<int64_t>()[size_t(order[0])],
                                       data.labels.to_vector<int64_t>()[size_t(order[1])],
                                       data.labels.to_vector<int64_t>()[size_t(order[2])]};
    CHECK(b.labels.to_vector<int64_t>() == want);
    check_close(b.images * 4.0, std::vector<double>(want.begin(), want.end()), {3, 1, 1, 1});
  }
  // Batches of 2: two per epoch, the second half of the order at odd steps.
  const std::vector<int64_t> epoch1 = nn::data::shuffled_indices(4, 9, 1);
  CHECK(nn::data::shuffled_batch(data, 3, 2, 9).labels.to_vector<int64_t>() ==
        std::vector<int64_t>{data.labels.to_vector<int64_t>()[size_t(epoch1[2])],
                             data.labels.to_vector<int64_t>()[size_t(epoch1[3])]});
  check_error([&] { nn::data::shuffled_batch(data, 0, 5, 9); }, {"batch 5", "dataset of 4"});
}
