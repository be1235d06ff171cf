#include "parallel/collective_math.h"

#include <algorithm>
#include <array>

#include <dlf/core/shape.h>

namespace dlf::parallel::detail {
namespace {

// Block by block: a block of every input is read before the block of `out` is written, so
// `out` may be one of the inputs (in-place allreduce).
template <typename T, typename Acc>
void reduce_typed(std::span<const void* const> inputs, void* out, int64_t lo, int64_t hi,
                  ReduceOp op) {
  constexpr int64_t kBlock = 2048;
  std::array<Acc, kBlock> acc;
  const Acc n = static_cast<Acc>(inputs.size());
  T* dst = static_cast<T*>(out);
  for (int64_t start = lo; start < hi; start += kBlock) {
    const int64_t count = std::min(kBlock, hi - start);
    const T* first = static_cast<const T*>(inputs[0]) + start;
    for (int64_t i = 0; i < count; ++i) acc[i] = static_cast<Acc>(first[i]);
    for (size_t r = 1; r < inputs.size(); ++r) {
      const T* in = static_cast<const T*>(inputs[r]) + start;
      if (op == ReduceOp::max) {
        for (int64_t i = 0; i < count; ++i) acc[i] = std::max(acc[i], static_cast<Acc>(in[i]));
      } else {
        for (int64_t i = 0; i < count; ++i) acc[i] += static_cast<Acc>(in[i]);
      }
    }
    if (op == ReduceOp::avg) {
      for (int64_t i = 0; i < count; ++i) acc[i] /= n;
    }
    for (int64_t i = 0; i < count; ++i) dst[start - lo + i] = static_cast<T>(acc[i]);
  }
}

}  // namespace

Shape gathered_shape(const Shape& shape, int size, const std::string& group) {
  DLF_CHECK(!shape.empty(), "allgather on group '", group, "': needs a tensor with dim 0");
  Shape out = shape;
  out[0] *= size;
  return out;
}

Shape scattered_shape(const Shape& shape, int size, const std::string& group) {
  DLF_CHECK(!shape.empty() && shape[0] % size == 0, "reduce_scatter on group '", group,
            "': dim 0 of ", shape_str(shape), " must divide into ", size, " equal parts");
  Shape out = shape;
  out[0] /= size;
  return out;
}

void check_reducible(DType dtype, ReduceOp op, const std::string& group) {
  DLF_CHECK(dtype != DType::b8, "collective on group '", group,
            "': bool tensors cannot be reduced");
  DLF_CHECK(op != ReduceOp::avg || is_floating(dtype), "collective on group '", group,
            "': avg needs a floating dtype, got ", dtype_name(dtype));
}

void check_contiguous(const Tensor& t, const char* what, const std::string& group) {
  DLF_CHECK(t.is_contiguous(), what, " on group '", group, "': the tensor must be contiguous");
}

void check_rank(int root, int size, const char* what, const std::string& group) {
  DLF_CHECK(root >= 0 && root < size, what, " on group '", group, "': rank ", root,
            " is not in 0..", size - 1);
}

void check_peer(int peer, int self, int size, const char* what, const std::string& group) {
  check_rank(peer, size, what, group);
  DLF_CHECK(peer != self, what, " on group '", group, "': rank ", self, " cannot be its own peer");
}

void check_same_tensor(const char* what, const std::string& group, int r, const Shape& shape0,
                       DType dtype0, const Shape& shape, DType dtype) {
  DLF_CHECK(shape == shape0 && dtype == dtype0, what, " on group '", group,
            "': ranks disagree on the tensor (rank 0 has ", shape_str(shape0), " ",
            dtype_name(dtype0), ", rank ", r, " has ", shape_str(shape), " ", dtype_name(dtype),
            ")");
}

void check_message(const Shape& shape, DType dtype, int src, const Tensor& t,
                   const std::string& group) {
  DLF_CHECK(shape == t.shape() && dtype == t.dtype(), "recv on group '", group, "': rank ", src,
            " sent ", shape_str(shape), " ", dtype_name(dtype), ", this rank expects ",
            shape_str(t.shape()), " ", dtype_name(t.dtype()));
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
