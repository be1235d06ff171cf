// oneDNN's instruction set as dlf reads it, and whether it has fast bf16. tests/CMakeLists.txt
// runs this again under ONEDNN_MAX_CPU_ISA=AVX2 and =AVX512_CORE.
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#include <dlf/device/cpu_features.h>

#include "test_util.h"

using namespace dlf;

namespace {

// The CPU's own flags (Linux): whether it has bf16 dot products.
bool cpu_flags_have_bf16_dot_products() {
  std::ifstream cpuinfo("/proc/cpuinfo");
  std::string line;
  while (std::getline(cpuinfo, line)) {
    if (line.rfind("flags", 0) != 0) continue;
    std::istringstream words(line);
    for (std::string flag; words >> flag;)
      if (flag == "avx512_bf16" || flag == "amx_bf16") return true;
    return false;
  }
  return false;
}

}  // namespace

TEST_CASE("cpu_has_fast_bf16 follows oneDNN's instruction set, which ONEDNN_MAX_CPU_ISA caps") {
  const char* cap = std::getenv("ONEDNN_MAX_CPU_ISA");
  const std::string isa = cpu_isa_name();
  CAPTURE(isa);
  if (cap == nullptr || *cap == '\0') {
    CHECK(cpu_has_fast_bf16() == cpu_flags_have_bf16_dot_products());
    CHECK(cpu_has_fast_bf16() == (isa == "avx512_core_bf16" || isa == "avx512_core_amx"));
  } else if (std::string(cap) == "AVX2") {
    CHECK(isa == "avx2");
    CHECK_FALSE(cpu_has_fast_bf16());
  } else if (std::string(cap) == "AVX512_CORE") {
    CHECK((isa == "avx512_core" || isa == "avx2"));  // avx2 on a CPU without AVX-512
    CHECK_FALSE(cpu_has_fast_bf16());
  }
}
