#include "device/cpu/onednn_context.h"

namespace dlf::cpu {

dnnl::engine& engine() {
  static dnnl::engine e(dnnl::engine::kind::cpu, 0);
  return e;
}

bool has_bf16() {
  // Asked of oneDNN itself: whether it builds a small bf16 matmul.
  static const bool yes = [] {
    using dnnl::memory;
    const memory::desc m({16, 16}, memory::data_type::bf16, memory::format_tag::ab);
    try {
      dnnl::matmul::primitive_desc(dnnl::matmul::desc(m, m, m), engine());
      return true;
    } catch (const dnnl::error&) {
      return false;
    }
  }();
  return yes;
}

dnnl::stream& stream() {
  thread_local dnnl::stream s(engine());
  return s;
}

}  // namespace dlf::cpu
