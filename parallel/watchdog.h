// The collective watchdog shared by the backends: a deadline per wait, and the error a rank
// raises when its peers have not come by then.
#pragma once
#include <chrono>
#include <string>
#include <vector>

namespace dlf::parallel::detail {

/// The end of a wait that started now, collective_timeout() from now.
class Deadline {
 public:
  Deadline();
  bool passed() const { return std::chrono::steady_clock::now() >= end_; }

 private:
  std::chrono::steady_clock::time_point end_;
};

/// Throws the watchdog's dlf::Error: `what` (an allreduce of `bytes`) on `group` of `size`
/// ranks waited collective_timeout() for `missing` (empty: they came, but the exchange stalled).
[[noreturn]] void collective_timed_out(const std::string& what, double bytes,
                                       const std::string& group, int size,
                                       const std::vector<int>& missing);

}  // namespace dlf::parallel::detail
