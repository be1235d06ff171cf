// The profiler sink: spans and counters on device tracks, written as Chrome trace JSON
// (opens in Perfetto or chrome://tracing). One process per device, one thread per stream,
// memory as a counter track. Times are the device's clock in seconds: virtual on sim/meta, on
// the cpu the wall clock since start() (now()), with a compute and a comm track per thread that
// records (the ranks of one process share the cpu device).
#pragma once
#include <string>

#include <dlf/device/device.h>
#include <dlf/device/stream.h>

namespace dlf::trace {

/// Starts collecting (drops what an earlier run collected).
void start();
bool enabled();  ///< whether a trace is being recorded
/// Seconds since start(): the time of the cpu device's records.
double now();
/// Names the calling thread's cpu tracks ("rank 1"); unnamed threads are "thread N". Returns the
/// name it had ("" when none).
std::string name_thread(std::string name);
/// Stops collecting and writes the trace to `path` (replace_file(): a failure leaves the file
/// there before whole).
void stop_and_write(const std::string& path);

/// A task on a device stream. `args_json` is the body of a JSON object ("\"bytes\":12") or empty.
void span(Device device, sim::Stream stream, std::string name, double start, double seconds,
          std::string args_json = {});
/// A sample of a counter track of the device ("memory").
void counter(Device device, std::string name, double time, double value);

}  // namespace dlf::trace
