#include "core/ops/elementwise_common.h"

#include <cmath>

namespace dlf::elementwise {
namespace {

bool accepts(DTypeSet set, DType t) {
  switch (set) {
    case DTypeSet::floating:
      return is_floating(t);
    case DTypeSet::numeric:
      return t != DType::b8;
    case DTypeSet::all:
      return true;
  }
  return false;
}

const char* accepted_names(DTypeSet set) {
  switch (set) {
    case DTypeSet::floating:
      return "f32, f64 or bf16";
    case DTypeSet::numeric:
      return "f32, f64, bf16, i32 or i64";
    case DTypeSet::all:
      return "any dtype";
  }
  return "";
}

}  // namespace

void check_dtype(const std::string& op, DTypeSet set, const Tensor& t) {
  DLF_CHECK(accepts(set, t.dtype()), op, ": dtype ", dtype_name(t.dtype()), " (shape ",
            shape_str(t.shape()), ") is not supported; expected ", accepted_names(set));
}

void check_same_dtype(const std::string& op, const Tensor& a, const Tensor& b) {
  DLF_CHECK(a.dtype() == b.dtype(), op, ": operands have different dtypes, ", dtype_name(a.dtype()),
            " ", shape_str(a.shape()), " and ", dtype_name(b.dtype()), " ", shape_str(b.shape()),
            "; convert one with .to()");
}

Shape broadcast(const std::string& op, const Shape& a, const Shape& b) {
  try {
    return broadcast_shapes(a, b);
  } catch (const Error& e) {
    throw Error(op + ": " + e.what());
  }
}

void check_scalar(const std::string& op, double value, const Tensor& t) {
  DLF_CHECK(is_floating(t.dtype()) || std::trunc(value) == value, op, ": scalar ", value,
            " is not an integer but the tensor (shape ", shape_str(t.shape()), ") is ",
            dtype_name(t.dtype()));
}

MemoryFormat output_format(Inputs in, const Shape& shape) {
  for (const Tensor& t : in) {
    if (t.defined() && t.shape() == shape) return t.memory_format();
  }
  return MemoryFormat::contiguous;
}

std::function<Cost(Inputs, const Attrs&, std::span<const Tensor>)> cost_per_element(double flops) {
  return [flops](Inputs in, const Attrs&, std::span<const Tensor> out) {
    Cost c;
    for (const Tensor& t : in) c.bytes_read += static_cast<double>(t.nbytes());
    c.bytes_written = static_cast<double>(out[0].nbytes());
    c.flops = flops * static_cast<double>(out[0].numel());
    return c;
  };
}

}  // namespace dlf::elementwise
