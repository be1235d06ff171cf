// The CPU device's oneDNN engine, per-thread stream and primitive cache (private header).
#pragma once
#include <oneapi/dnnl/dnnl.hpp>

#include <functional>
#include <mutex>
#include <string>
#include <unordered_map>

namespace dlf::cpu {

dnnl::engine& engine();
/// One stream per calling thread (a stream is not shared across threads).
dnnl::stream& stream();

/// Builds a value once per key and keeps it: primitives are cached by shape, so the hot path
/// never creates one. Safe to call from several threads; cached values are never evicted.
template <typename V>
const V& cached(const std::string& key, const std::function<V()>& make) {
  static std::mutex mutex;
  static std::unordered_map<std::string, V> cache;
  {
    std::lock_guard lock(mutex);
    if (auto it = cache.find(key); it != cache.end()) return it->second;
  }
  V value = make();  // outside the lock: creation can take milliseconds
  std::lock_guard lock(mutex);
  return cache.try_emplace(key, std::move(value)).first->second;
}

}  // namespace dlf::cpu
