// Tensor's math methods and index(): each is the function of core/ops/ of the same name.
#include <dlf/core/ops/elementwise.h>
#include <dlf/core/ops/linalg.h>
#include <dlf/core/ops/normalization.h>
#include <dlf/core/ops/reduce.h>
#include <dlf/core/tensor.h>

#include <limits>

namespace dlf {

Tensor Tensor::index(std::initializer_list<TensorIndex> indices) const {
  DLF_CHECK(int64_t(indices.size()) <= dim(), "index: ", indices.size(),
            " indices for a tensor of shape ", shape_str(shape()));
  Tensor out = *this;
  int64_t d = 0;  // the dim of `out` the next index applies to
  for (const TensorIndex& i : indices) {
    if (const int64_t* at = std::get_if<int64_t>(&i)) {
      out = out.select(d, *at);  // the dim goes: the next index applies to the same d
    } else {
      const Slice& s = std::get<Slice>(i);
      DLF_CHECK(s.step > 0, "index: a slice's step must be positive, got ", s.step);
      out = out.slice(d, s.start.value_or(0), s.stop.value_or(std::numeric_limits<int64_t>::max()),
                      s.step);
      ++d;
    }
  }
  return out;
}

Tensor Tensor::neg() const { return dlf::neg(*this); }
Tensor Tensor::exp() const { return dlf::exp(*this); }
Tensor Tensor::log() const { return dlf::log(*this); }
Tensor Tensor::sqrt() const { return dlf::sqrt(*this); }
Tensor Tensor::rsqrt() const { return dlf::rsqrt(*this); }
Tensor Tensor::abs() const { return dlf::abs(*this); }
Tensor Tensor::sin() const { return dlf::sin(*this); }
Tensor Tensor::cos() const { return dlf::cos(*this); }
Tensor Tensor::tanh() const { return dlf::tanh(*this); }
Tensor Tensor::sigmoid() const { return dlf::sigmoid(*this); }
Tensor Tensor::relu() const { return dlf::relu(*this); }
Tensor Tensor::square() const { return dlf::square(*this); }
Tensor Tensor::pow(double exponent) const { return dlf::pow(*this, exponent); }
Tensor Tensor::pow(const Tensor& exponent) const { return dlf::pow(*this, exponent); }
Tensor Tensor::clamp(double min, double max) const { return dlf::clamp(*this, min, max); }
Tensor Tensor::matmul(const Tensor& other) const { return dlf::matmul(*this, other); }
Tensor Tensor::softmax(int64_t dim) const { return dlf::softmax(*this, dim); }
Tensor Tensor::sum(const Shape& dims, bool keepdim) const { return dlf::sum(*this, dims, keepdim); }
Tensor Tensor::mean(const Shape& dims, bool keepdim) const {
  return dlf::mean(*this, dims, keepdim);
}
Tensor Tensor::max(const Shape& dims, bool keepdim) const { return dlf::max(*this, dims, keepdim); }
Tensor Tensor::argmax(int64_t dim, bool keepdim) const { return dlf::argmax(*this, dim, keepdim); }
Tensor Tensor::eq(const Tensor& other) const { return dlf::eq(*this, other); }
Tensor Tensor::ne(const Tensor& other) const { return dlf::ne(*this, other); }
Tensor Tensor::lt(const Tensor& other) const { return dlf::lt(*this, other); }
Tensor Tensor::le(const Tensor& other) const { return dlf::le(*this, other); }
Tensor Tensor::gt(const Tensor& other) const { return dlf::gt(*this, other); }
Tensor Tensor::ge(const Tensor& other) const { return dlf::ge(*this, other); }
Tensor Tensor::eq(double other) const { return dlf::eq(*this, other); }
Tensor Tensor::ne(double other) const { return dlf::ne(*this, other); }
Tensor Tensor::lt(double other) const { return dlf::lt(*this, other); }
Tensor Tensor::le(double other) const { return dlf::le(*this, other); }
Tensor Tensor::gt(double other) const { return dlf::gt(*this, other); }
Tensor Tensor::ge(double other) const { return dlf::ge(*this, other); }

}  // namespace dlf
