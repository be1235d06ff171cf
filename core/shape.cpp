#include <dlf/core/shape.h>
#include <dlf/error.h>

#include <algorithm>

namespace dlf {

int64_t numel(const Shape& shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

Shape contiguous_strides(const Shape& shape) {
  Shape strides(shape.size());
  int64_t s = 1;
  for (size_t i = shape.size(); i-- > 0;) {
    strides[i] = s;
    s *= std::max<int64_t>(shape[i], 1);
  }
  return strides;
}

Shape dense_strides(const Shape& shape, MemoryFormat format) {
  if (format == MemoryFormat::contiguous) return contiguous_strides(shape);
  DLF_CHECK(shape.size() == 4, "channels-last layout needs a 4-D [N, C, H, W] shape, got ",
            shape_str(shape));
  const Shape nhwc = contiguous_strides({shape[0], shape[2], shape[3], shape[1]});
  return {nhwc[0], nhwc[3], nhwc[1], nhwc[2]};
}

std::string shape_str(const Shape& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i)
    s.append(i ? ", " : "").append(std::to_string(shape[i]));
  return s + "]";
}

Shape broadcast_shapes(const Shape& a, const Shape& b) {
  size_t rank = std::max(a.size(), b.size());
  Shape out(rank);
  for (size_t i = 0; i < rank; ++i) {
    int64_t da = i < rank - a.size() ? 1 : a[i - (rank - a.size())];
    int64_t db = i < rank - b.size() ? 1 : b[i - (rank - b.size())];
    DLF_CHECK(da == db || da == 1 || db == 1, "shapes ", shape_str(a), " and ", shape_str(b),
              " do not broadcast: dim ", i, " is ", da, " vs ", db);
    out[i] = da == 1 ? db : da;
  }
  return out;
}

int64_t wrap_dim(int64_t dim, int64_t rank) {
  int64_t r = std::max<int64_t>(rank, 1);
  DLF_CHECK(dim >= -r && dim < r, "dim ", dim, " is out of range for a tensor of rank ", rank,
            " (expected ", -r, " to ", r - 1, ")");
  return dim < 0 ? dim + r : dim;
}

}  // namespace dlf
