#include "parallel/collective_math.h"

#include <algorithm>
#include <vector>

namespace dlf::parallel::detail {
namespace {

template <typename T, typename Acc>
void reduce_typed(std::span<const void* const> inputs, void* out, int64_t lo, int64_t hi,
                  ReduceOp op) {
  const int64_t count = hi - lo;
  std::vector<Acc> acc(static_cast<size_t>(count));
  const T* first = static_cast<const T*>(inputs[0]) + lo;
  for (int64_t i = 0; i < count; ++i) acc[i] = static_cast<Acc>(first[i]);
  for (size_t r = 1; r < inputs.size(); ++r) {
    const T* in = static_cast<const T*>(inputs[r]) + lo;
    if (op == ReduceOp::max) {
      for (int64_t i = 0; i < count; ++i) acc[i] = std::max(acc[i], static_cast<Acc>(in[i]));
    } else {
      for (int64_t i = 0; i < count; ++i) acc[i] += static_cast<Acc>(in[i]);
    }
  }
  if (op == ReduceOp::avg) {
    const Acc n = static_cast<Acc>(inputs.size());
    for (int64_t i = 0; i < count; ++i) acc[i] /= n;
  }
  T* dst = static_cast<T*>(out);
  for (int64_t i = 0; i < count; ++i) dst[i] = static_cast<T>(acc[i]);
}

}  // namespace

void check_reducible(DType dtype, ReduceOp op, const std::string& group) {
  DLF_CHECK(dtype != DType::b8, "collective on group '", group,
            "': bool tensors cannot be reduced");
  DLF_CHECK(op != ReduceOp::avg || is_floating(dtype), "collective on group '", group,
            "': avg needs a floating dtype, got ", dtype_name(dtype));
}

void reduce_range(std::span<const void* const> inputs, void* out, int64_t lo, int64_t hi,
                  DType dtype, ReduceOp op) {
  switch (dtype) {
    case DType::f32:
      return reduce_typed<float, float>(inputs, out, lo, hi, op);
    case DType::f64:
      return reduce_typed<double, double>(inputs, out, lo, hi, op);
    case DType::bf16:
      return reduce_typed<bf16, float>(inputs, out, lo, hi, op);
    case DType::i32:
      return reduce_typed<int32_t, int32_t>(inputs, out, lo, hi, op);
    case DType::i64:
      return reduce_typed<int64_t, int64_t>(inputs, out, lo, hi, op);
    case DType::b8:
      break;
  }
  throw Error(::dlf::detail::concat("cannot reduce tensors of dtype ", dtype_name(dtype)));
}

}  // namespace dlf::parallel::detail
