// How cold each kernel starts on a device: a kernel whose code, state and page-table entries
// the device's traffic (kernels, copies, collectives) since it last ran has pushed out of the
// caches runs slower than it does
// after itself (KernelEfficiency::cold_overhead). On a CPU, a small oneDNN matmul takes 18 us
// after itself and 60 more after copies that moved 256 MiB; the extra grows with the bytes moved
// in between (README, "Cold starts").
#pragma once
#include <functional>
#include <map>
#include <string>
#include <string_view>

namespace dlf::sim {

/// The bytes a device moved (its kernels, copies and collectives) since each op last ran there,
/// as a share of the bytes after which a kernel starts fully cold (SimSpec::cold_bytes).
class ColdStarts {
 public:
  /// The share in [0, 1] of its class's cold overhead a kernel of op `name` pays now, with
  /// `cold_bytes` the bytes after which it pays all of it (0: never cold): the bytes moved since
  /// that op last ran over `cold_bytes`, at most 1, and 1 the first time. Then counts the
  /// kernel's own `bytes`.
  double run(std::string_view name, double bytes, double cold_bytes);
  /// Counts bytes moved by work that is not priced as a kernel: a collective's, a copy over the
  /// host link, what empties the caches before a kernel timed cold.
  void moved(double bytes) { moved_ += bytes; }
  /// The share the last run() gave.
  double last_share() const { return last_share_; }

 private:
  double moved_ = 0;
  double last_share_ = 0;
  std::map<std::string, double, std::less<>> moved_at_last_run_;
};

}  // namespace dlf::sim
