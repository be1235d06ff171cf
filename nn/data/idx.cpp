#include <zlib.h>

#include <dlf/core/ops/elementwise.h>
#include <dlf/core/random.h>
#include <dlf/nn/data/idx.h>

#include <cstring>
#include <filesystem>
#include <memory>

namespace dlf::nn::data {
namespace {

// gzread reads plain files as they are, so one reader serves both.
struct GzFile {
  explicit GzFile(const std::string& path) : file(gzopen(path.c_str(), "rb")) {
    DLF_CHECK(file != nullptr, "cannot open IDX file ", path);
  }
  ~GzFile() { gzclose(file); }
  GzFile(const GzFile&) = delete;
  GzFile& operator=(const GzFile&) = delete;
  bool read(void* out, size_t bytes) {
    auto* p = static_cast<char*>(out);
    while (bytes > 0) {
      const int chunk = static_cast<int>(std::min<size_t>(bytes, 1 << 30));
      const int got = gzread(file, p, static_cast<unsigned>(chunk));
      if (got <= 0) return false;
      p += got;
      bytes -= static_cast<size_t>(got);
    }
    return true;
  }
  gzFile file;
};

}  // namespace

IdxArray read_idx(const std::string& path) {
  DLF_CHECK(std::filesystem::exists(path), "IDX file ", path, " does not exist");
  GzFile in(path);
  uint8_t magic[4];
  DLF_CHECK(in.read(magic, 4), "IDX file ", path, " is empty or truncated");
  DLF_CHECK(magic[0] == 0 && magic[1] == 0 && magic[2] == 0x08 && magic[3] >= 1 && magic[3] <= 4,
            "IDX file ", path, " does not start with an unsigned-byte IDX header (00 00 08 n)");
  IdxArray a;
  int64_t count = 1;
  for (int d = 0; d < magic[3]; ++d) {
    uint8_t be[4];
    DLF_CHECK(in.read(be, 4), "IDX file ", path, " is truncated in its header");
    a.shape.push_back((int64_t(be[0]) << 24) | (int64_t(be[1]) << 16) | (int64_t(be[2]) << 8) |
                      int64_t(be[3]));
    count *= a.shape.back();
  }
  a.data.resize(size_t(count));
  DLF_CHECK(count == 0 || in.read(a.data.data(), a.data.size()), "IDX file ", path,
            " is truncated: its header promises ", count, " bytes of data");
  return a;
}

ImageDataset load_fashion_mnist(bool train, const std::string& dir) {
  const std::string prefix = dir + (train ? "/train" : "/t10k");
  const IdxArray images = read_idx(prefix + "-images-idx3-ubyte.gz");
  const IdxArray labels = read_idx(prefix + "-labels-idx1-ubyte.gz");
  DLF_CHECK(
      images.shape.size() == 3 && labels.shape.size() == 1 && images.shape[0] == labels.shape[0],
      "Fashion-MNIST in ", dir,
      ": images and labels do not match (install Debian's "
      "dataset-fashion-mnist)");
  const int64_t n = images.shape[0], h = images.shape[1], w = images.shape[2];
  ImageDataset out{Tensor::empty({n, 1, h, w}, DType::f32, kCPU),
                   Tensor::empty({n}, DType::i64, kCPU)};
  float* px = out.images.data<float>();
  for (size_t i = 0; i < images.data.size(); ++i) px[i] = float(images.data[i]) / 255.0f;
  int64_t* y = out.labels.data<int64_t>();
  for (int64_t i = 0; i < n; ++i) {
    DLF_CHECK(labels.data[size_t(i)] < 10, "Fashion-MNIST label ", int(labels.data[size_t(i)]),
              " at ", i, " is not a class 0..9");
    y[i] = labels.data[size_t(i)];
  }
  return out;
}

ImageDataset normalized(const ImageDataset& data, double mean, double std) {
  DLF_CHECK(std > 0, "normalized: the standard deviation must be positive, got ", std);
  return {(data.images - mean) / std, data.labels};
}

std::vector<int64_t> shuffled_indices(int64_t n, uint64_t seed, int64_t epoch) {
  std::vector<int64_t> order(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) order[size_t(i)] = i;
  const uint64_t base = uint64_t(epoch) * uint64_t(n);
  for (int64_t i = n - 1; i > 0; --i) {
    const auto w = philox(seed, base + uint64_t(i));
    const uint64_t draw = (uint64_t(w[0]) << 32) | w[1];
    std::swap(order[size_t(i)], order[size_t(draw % uint64_t(i + 1))]);
  }
  return order;
}

ImageDataset batch_of(const ImageDataset& data, const std::vector<int64_t>& indices) {
  const int64_t n = data.images.size(0), b = int64_t(indices.size());
  const int64_t per = data.images.numel() / std::max<int64_t>(n, 1);
  Shape shape = data.images.shape();
  shape[0] = b;
  ImageDataset out{Tensor::empty(shape, DType::f32, kCPU), Tensor::empty({b}, DType::i64, kCPU)};
  const Tensor images = data.images.contiguous(), labels = data.labels.contiguous();
  for (int64_t r = 0; r < b; ++r) {
    const int64_t i = indices[size_t(r)];
    DLF_CHECK(i >= 0 && i < n, "batch_of: index ", i, " is outside the dataset of ", n);
    std::memcpy(out.images.data<float>() + r * per, images.data<float>() + i * per,
                size_t(per) * sizeof(float));
    out.labels.data<int64_t>()[r] = labels.data<int64_t>()[i];
  }
  return out;
}

ImageDataset shuffled_batch(const ImageDataset& data, int64_t step, int64_t batch, uint64_t seed) {
  const int64_t n = data.images.size(0);
  DLF_CHECK(batch >= 1 && batch <= n && step >= 0, "shuffled_batch: batch ", batch, " at step ",
            step, " does not fit a dataset of ", n, " (need 1 <= batch <= ", n, ", step >= 0)");
  const int64_t per_epoch = n / batch, first = (step % per_epoch) * batch;
  const std::vector<int64_t> order = shuffled_indices(n, seed, step / per_epoch);
  return batch_of(data, {order.begin() + first, order.begin() + first + batch});
}

}  // namespace dlf::nn::data
