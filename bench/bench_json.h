// Benchmark output and timing shared by every benchmark in bench/.
//
// Output: one JSON object per line on stdout (dlf::JsonLine), fields in the order added
// (shared/BENCH.md lists them). Timing: warm-up calls, then timed repetitions summarised as
// median/min/max.
#pragma once
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include <dlf/json_line.h>

namespace dlf::bench {

using dlf::JsonLine;

struct Timing {
  double median_ms = 0, min_ms = 0, max_ms = 0;
};

inline Timing summarize(std::vector<double> ms) {
  if (ms.empty()) return {};
  std::sort(ms.begin(), ms.end());
  const size_t n = ms.size();
  const double median = n % 2 ? ms[n / 2] : (ms[n / 2 - 1] + ms[n / 2]) / 2;
  return {median, ms.front(), ms.back()};
}

/// Wall-clock milliseconds of one call.
template <typename Fn>
double time_once_ms(Fn&& fn) {
  const auto start = std::chrono::steady_clock::now();
  fn();
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
      .count();
}

/// `warmup` untimed calls, then `reps` timed ones.
template <typename Fn>
Timing time_ms(Fn&& fn, int warmup, int reps) {
  for (int i = 0; i < warmup; ++i) fn();
  std::vector<double> ms;
  for (int i = 0; i < reps; ++i) ms.push_back(time_once_ms(fn));
  return summarize(std::move(ms));
}

/// Times each of `fns` in turn (fns[0], fns[1], ..., fns[0], ...) so that drifting machine load
/// hits them alike: `warmup` untimed rounds, then `reps` timed ones; one Timing per function.
inline std::vector<Timing> time_round_robin(const std::vector<std::function<void()>>& fns,
                                            int warmup, int reps) {
  for (int i = 0; i < warmup; ++i)
    for (const auto& fn : fns) fn();
  std::vector<std::vector<double>> ms(fns.size());
  for (int i = 0; i < reps; ++i)
    for (size_t f = 0; f < fns.size(); ++f) ms[f].push_back(time_once_ms(fns[f]));
  std::vector<Timing> out;
  for (std::vector<double>& m : ms) out.push_back(summarize(std::move(m)));
  return out;
}

/// Times a and b alternately (a, b, a, b, ...): time_round_robin of the two.
template <typename A, typename B>
std::pair<Timing, Timing> time_alternating(A&& a, B&& b, int warmup, int reps) {
  const std::vector<Timing> t = time_round_robin({[&] { a(); }, [&] { b(); }}, warmup, reps);
  return {t[0], t[1]};
}

inline JsonLine& add_timing(JsonLine& line, const Timing& t) {
  return line.add("median_ms", t.median_ms).add("min_ms", t.min_ms).add("max_ms", t.max_ms);
}

/// The JSON object `object` (JsonLine::str()) with one more field: `key` holding `values` as an
/// array of numbers (every repetition of a case, say).
inline std::string with_array(const std::string& object, const std::string& key,
                              const std::vector<double>& values) {
  std::string field = JsonLine().add(key, int64_t(0)).str();  // the key, escaped as JsonLine does
  field = field.substr(1, field.size() - 3) + "[";
  for (size_t i = 0; i < values.size(); ++i) {
    char text[32];
    std::snprintf(text, sizeof text, "%.6g", std::isfinite(values[i]) ? values[i] : 0.0);
    field += (i ? "," : "") + std::string(text);
  }
  std::string out = object.substr(0, object.size() - 1);  // without the closing brace
  return out + (out.size() > 1 ? "," : "") + field + "]}";
}

}  // namespace dlf::bench
