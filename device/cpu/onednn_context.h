// The CPU device's oneDNN engine, per-thread stream and primitive cache (private header).
#pragma once
#include <oneapi/dnnl/dnnl.hpp>

#include <functional>
#include <string>
#include <unordered_map>

namespace dlf::cpu {

dnnl::engine& engine();
/// Whether oneDNN runs bf16 primitives on this CPU: it needs AVX-512 (native bf16 dot products
/// from AVX512_BF16 on, emulated before); on an AVX2 CPU it has none, and bf16 takes the loops
/// (or, for products, f32 primitives on converted operands).
bool has_bf16();
/// One stream per calling thread (a stream is not shared across threads).
dnnl::stream& stream();

/// Builds a value once per key and thread, and keeps it while the thread lives: primitives are
/// cached by shape, so the hot path never creates one. Per thread because a oneDNN primitive
/// owns its scratchpad: the same primitive run by two ranks at once gives wrong results.
template <typename V>
const V& cached(const std::string& key, const std::function<V()>& make) {
  thread_local std::unordered_map<std::string, V> cache;
  if (auto it = cache.find(key); it != cache.end()) return it->second;
  return cache.try_emplace(key, make()).first->second;
}

}  // namespace dlf::cpu
