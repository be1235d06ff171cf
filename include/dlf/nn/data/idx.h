// The IDX format of MNIST and Fashion-MNIST (gzip'd or plain), and Fashion-MNIST itself as
// Debian's dataset-fashion-mnist package installs it.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include <dlf/core/tensor.h>

namespace dlf::nn::data {

/// An unsigned-byte IDX array: its dims and its bytes, row-major.
struct IdxArray {
  std::vector<int64_t> shape;  ///< dims
  std::vector<uint8_t> data;   ///< the elements, row-major
};
/// Reads an IDX file of unsigned bytes (type 0x08), gzip-compressed or not; a dlf::Error names
/// the file when it is missing, of another type, or shorter than its header says.
IdxArray read_idx(const std::string& path);

/// Images and their labels, as float tensors ready to train on.
struct ImageDataset {
  Tensor images;  ///< f32 [N, 1, H, W] in [0, 1]
  Tensor labels;  ///< i64 [N]
};
/// The 60,000 training or 10,000 test images with their labels (0..9).
ImageDataset load_fashion_mnist(bool train,
                                const std::string& dir = "/usr/share/datasets/fashion-mnist");
/// Mean and standard deviation of Fashion-MNIST's training pixels in [0, 1].
/// Fashion-MNIST's pixel mean and deviation (on [0, 1])
///@{
inline constexpr double kFashionMnistMean = 0.2860, kFashionMnistStd = 0.3530;
///@}
/// The images as (x - mean) / std, the labels as they are.
ImageDataset normalized(const ImageDataset& data, double mean = kFashionMnistMean,
                        double std = kFashionMnistStd);

/// A permutation of 0..n-1 that depends only on (seed, epoch) (Fisher-Yates on Philox draws).
std::vector<int64_t> shuffled_indices(int64_t n, uint64_t seed, int64_t epoch);
/// The images and labels at `indices`, as a new batch.
ImageDataset batch_of(const ImageDataset& data, const std::vector<int64_t>& indices);
/// Training batch `step` (0-based) of `batch` examples: epoch e visits the data in the order
/// shuffled_indices(n, seed, e), cut into n / batch batches (the remainder is left out). A
/// function of (seed, step) alone, so a run resumed at `step` draws what the uninterrupted run
/// would have.
ImageDataset shuffled_batch(const ImageDataset& data, int64_t step, int64_t batch, uint64_t seed);

}  // namespace dlf::nn::data
