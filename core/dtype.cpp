#include <dlf/core/dtype.h>
#include <dlf/error.h>

namespace dlf {

size_t dtype_size(DType t) {
  switch (t) {
    case DType::f32:
      return 4;
    case DType::f64:
      return 8;
    case DType::bf16:
      return 2;
    case DType::i32:
      return 4;
    case DType::i64:
      return 8;
    case DType::b8:
      return 1;
  }
  return 0;
}

const char* dtype_name(DType t) {
  switch (t) {
    case DType::f32:
      return "f32";
    case DType::f64:
      return "f64";
    case DType::bf16:
      return "bf16";
    case DType::i32:
      return "i32";
    case DType::i64:
      return "i64";
    case DType::b8:
      return "bool";
  }
  return "?";
}

bool is_floating(DType t) { return t == DType::f32 || t == DType::f64 || t == DType::bf16; }

DType parse_dtype(const std::string& name) {
  for (DType t : {DType::f32, DType::f64, DType::bf16, DType::i32, DType::i64, DType::b8}) {
    if (name == dtype_name(t)) return t;
  }
  throw Error("unknown dtype '" + name + "': expected f32, f64, bf16, i32, i64 or bool");
}

}  // namespace dlf
