// A device's streams: the tracks of the simulated clock and of the profiler's trace.
#pragma once
#include <cstdint>
#include <string_view>

namespace dlf::sim {

/// A simulated device's streams: its kernels, its collectives, and its copies to and from
/// host memory over the host link (offload, batches going up, results coming down).
enum class Stream : uint8_t { compute, comm, host };
inline constexpr int kStreams = 3;  ///< compute, comm and host

/// "compute", "comm", "host".
constexpr std::string_view stream_name(Stream stream) {
  switch (stream) {
    case Stream::compute:
      return "compute";
    case Stream::comm:
      return "comm";
    case Stream::host:
      return "host";
  }
  return "compute";
}

}  // namespace dlf::sim
