#include <dlf/device/cpu_features.h>

#include <oneapi/dnnl/dnnl.hpp>

namespace dlf {
namespace {

std::string isa_name(dnnl::cpu_isa isa) {
  using dnnl::cpu_isa;
  switch (isa) {
    case cpu_isa::sse41:
      return "sse41";
    case cpu_isa::avx:
      return "avx";
    case cpu_isa::avx2:
      return "avx2";
    case cpu_isa::avx2_vnni:
      return "avx2_vnni";
    case cpu_isa::avx512_mic:
      return "avx512_mic";
    case cpu_isa::avx512_mic_4ops:
      return "avx512_mic_4ops";
    case cpu_isa::avx512_core:
      return "avx512_core";
    case cpu_isa::avx512_core_vnni:
      return "avx512_core_vnni";
    case cpu_isa::avx512_core_bf16:
      return "avx512_core_bf16";
    case cpu_isa::avx512_core_amx:
      return "avx512_core_amx";
    default:
      return "unknown";
  }
}

}  // namespace

const std::string& cpu_isa_name() {
  static const std::string name = isa_name(dnnl::get_effective_cpu_isa());
  return name;
}

bool cpu_has_fast_bf16() {
  static const bool fast = [] {
    const dnnl::cpu_isa isa = dnnl::get_effective_cpu_isa();
    return isa == dnnl::cpu_isa::avx512_core_bf16 || isa == dnnl::cpu_isa::avx512_core_amx;
  }();
  return fast;
}

}  // namespace dlf
