#include <dlf/autograd/backward.h>
#include <dlf/autograd/gradcheck.h>
#include <dlf/core/factory.h>

#include <cmath>
#include <sstream>

namespace dlf::autograd {
namespace {

double projected(const Tensor& out, const std::vector<double>& v) {
  std::vector<double> values = out.to_vector<double>();
  double s = 0;
  for (size_t i = 0; i < values.size(); ++i) s += values[i] * v[i];
  return s;
}

Shape unravel(int64_t flat, const Shape& shape) {
  Shape index(shape.size());
  for (size_t d = shape.size(); d-- > 0;) {
    index[d] = flat % shape[d];
    flat /= shape[d];
  }
  return index;
}

}  // namespace

std::string GradcheckResult::str() const {
  std::ostringstream os;
  os << (ok ? "gradcheck passed" : "gradcheck FAILED") << " over " << elements << " elements";
  if (input >= 0) {
    os << "; worst: input " << input << " element " << shape_str(index) << ", analytic " << analytic
       << " vs numeric " << numeric << " (" << worst_ratio << " x tolerance)";
  }
  return os.str();
}

GradcheckResult gradcheck(const std::function<Tensor(const std::vector<Tensor>&)>& fn,
                          const std::vector<Tensor>& inputs, const GradcheckOptions& options) {
  std::vector<Tensor> checked;
  std::vector<int> checked_index;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const Tensor& t = inputs[i];
    if (!t.defined() || !t.requires_grad()) continue;
    DLF_CHECK(t.dtype() == DType::f64, "gradcheck: input ", i, " is ", dtype_name(t.dtype()),
              "; finite differences need f64");
    for (int64_t d = 0; d < t.dim(); ++d) {
      DLF_CHECK(t.strides()[d] != 0 || t.shape()[d] <= 1, "gradcheck: input ", i,
                " overlaps itself (an expanded view); pass contiguous() of it");
    }
    checked.push_back(t);
    checked_index.push_back(static_cast<int>(i));
  }
  DLF_CHECK(!checked.empty(), "gradcheck: no input requires grad");

  Tensor out = fn(inputs);
  Generator gen(options.seed);
  Tensor v = randn(out.shape(), {.dtype = DType::f64, .device = out.device()}, &gen);
  std::vector<Tensor> analytic = grad({out}, checked, {v.to(out.dtype())});
  const std::vector<double> v_host = v.to_vector<double>();

  // The numeric pass keeps grad mode as it is: fn may itself use autograd (second order).
  GradcheckResult result;
  for (size_t k = 0; k < checked.size(); ++k) {
    const Tensor& x = checked[k];
    std::vector<double> a = analytic[k].defined() ? analytic[k].to_vector<double>()
                                                  : std::vector<double>(x.numel(), 0.0);
    double* base = static_cast<double*>(x.storage()->data());
    for (int64_t flat = 0; flat < x.numel(); ++flat) {
      Shape index = unravel(flat, x.shape());
      int64_t offset = x.offset();
      for (size_t d = 0; d < index.size(); ++d) offset += index[d] * x.strides()[d];
      const double original = base[offset];
      base[offset] = original + options.eps;
      const double plus = projected(fn(inputs), v_host);
      base[offset] = original - options.eps;
      const double minus = projected(fn(inputs), v_host);
      base[offset] = original;
      const double numeric = (plus - minus) / (2 * options.eps);
      const double ratio =
          std::fabs(a[flat] - numeric) / (options.atol + options.rtol * std::fabs(numeric));
      ++result.elements;
      if (ratio > result.worst_ratio || result.input < 0 || std::isnan(ratio)) {
        result.worst_ratio = ratio;
        result.input = checked_index[k];
        result.index = index;
        result.analytic = a[flat];
        result.numeric = numeric;
      }
      if (!(ratio <= 1)) result.ok = false;
    }
  }
  return result;
}

}  // namespace dlf::autograd
