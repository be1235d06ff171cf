// What the CPU's kernels can do on this host, as oneDNN reports it: its effective instruction
// set is the CPU's best, capped by the ONEDNN_MAX_CPU_ISA environment variable (AVX2,
// AVX512_CORE, ...), which lets one host run the code paths of hosts without its instructions.
#pragma once
#include <string>

namespace dlf {

/// oneDNN's effective instruction set in its own spelling: "avx2", "avx512_core",
/// "avx512_core_bf16", "avx512_core_amx", ... Read once per process.
const std::string& cpu_isa_name();

/// Whether bf16 products are fast here: oneDNN's instruction set has bf16 dot products
/// (avx512_core_bf16, or AMX). Without them oneDNN emulates bf16 (avx512_core) or has no bf16
/// kernels (avx2), and a bf16 product costs more than an f32 one. Read once per process.
bool cpu_has_fast_bf16();

}  // namespace dlf
