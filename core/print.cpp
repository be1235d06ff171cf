// Readable printing: tensor([[1.0000, 2.0000], ...], dtype=f32), summarised when large.
#include <dlf/core/tensor.h>

#include <cmath>
#include <cstdio>
#include <sstream>

namespace dlf {
namespace {

constexpr int64_t kSummariseAbove = 1000;  // elements
constexpr int64_t kEdgeItems = 3;

std::string format_value(double v, DType dtype, bool scientific) {
  char buf[32];
  if (dtype == DType::b8) return v != 0 ? "true" : "false";
  if (!is_floating(dtype)) {
    std::snprintf(buf, sizeof buf, "%lld", static_cast<long long>(v));
  } else if (std::isnan(v) || std::isinf(v)) {
    return std::isnan(v) ? "nan" : (v > 0 ? "inf" : "-inf");
  } else {
    std::snprintf(buf, sizeof buf, scientific ? "%.4e" : "%.4f", v);
  }
  return buf;
}

void print_dim(std::ostringstream& os, const std::vector<double>& values, const Shape& shape,
               size_t d, int64_t base, bool summarise, DType dtype, bool scientific, int indent) {
  const int64_t stride = numel(Shape(shape.begin() + static_cast<long>(d) + 1, shape.end()));
  const int64_t n = shape[d];
  os << "[";
  for (int64_t i = 0; i < n; ++i) {
    if (summarise && n > 2 * kEdgeItems && i == kEdgeItems) {
      os << "..., ";
      i = n - kEdgeItems;
    }
    if (d + 1 == shape.size()) {
      os << format_value(values[base + i], dtype, scientific);
    } else {
      print_dim(os, values, shape, d + 1, base + i * stride, summarise, dtype, scientific,
                indent + 1);
    }
    if (i + 1 < n) os << (d + 1 == shape.size() ? ", " : ",\n" + std::string(indent + 1, ' '));
  }
  os << "]";
}

}  // namespace

std::string Tensor::str() const {
  if (!defined()) return "tensor(undefined)";
  std::ostringstream os;
  const std::string suffix = std::string("dtype=") + dtype_name(dtype()) +
                             (device() == kCPU ? "" : ", device=" + device().str());
  if (!device().has_data()) {
    os << "tensor(shape=" << shape_str(shape()) << ", " << suffix << ")";
    return os.str();
  }
  std::vector<double> values = to_vector<double>();
  bool scientific = false;
  for (double v : values) {
    double a = std::fabs(v);
    if (std::isfinite(a) && (a >= 1e5 || (a > 0 && a < 1e-4))) scientific = true;
  }
  os << "tensor(";
  if (dim() == 0) {
    os << format_value(values[0], dtype(), scientific);
  } else {
    print_dim(os, values, shape(), 0, 0, numel() > kSummariseAbove, dtype(), scientific, 7);
  }
  os << ", " << suffix << ")";
  return os.str();
}

}  // namespace dlf
