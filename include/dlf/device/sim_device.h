// The simulated accelerator and the meta device: each `sim:i` / `meta:i` has a spec, its own
// memory capacity and a virtual clock with a compute and a communication stream. The dispatch
// point charges every op there; communicators charge collectives.
#pragma once
#include <algorithm>
#include <array>
#include <span>
#include <string>
#include <string_view>

#include <dlf/device/allocator.h>
#include <dlf/device/cold_starts.h>
#include <dlf/device/device.h>
#include <dlf/device/sim_spec.h>
#include <dlf/device/stream.h>

namespace dlf::sim {

/// A point on a stream that another stream can wait for.
struct Event {
  double time = 0;  ///< seconds on the device's clock
};

/// A device's virtual clock, in seconds: each stream runs its tasks in order.
class Timeline {
 public:
  /// Where `stream` is on the clock.
  double now(Stream stream) const { return now_[static_cast<size_t>(stream)]; }
  /// The latest of the streams.
  double now() const { return *std::max_element(now_.begin(), now_.end()); }
  /// Runs a task of `seconds` on `stream`, starting no earlier than `not_before`; returns its
  /// start time.
  double run(Stream stream, double seconds, double not_before = 0);
  /// `stream` does nothing more until `event` has happened.
  void wait(Stream stream, Event event);

 private:
  std::array<double, kStreams> now_{};
};

/// Gives `device` (sim or meta) a spec. Unconfigured sim devices are a100-40gb; unconfigured
/// meta devices are timed as a100-40gb with unlimited memory.
void configure(Device device, const SimSpec& spec);
const SimSpec& spec_of(Device device);   ///< the spec `device` was configured with
Timeline& timeline(Device device);       ///< `device`'s clock
ColdStarts& cold_starts(Device device);  ///< how cold each kernel starts on `device`
/// Zeroes the device's clock, forgets which kernels ran (all start cold again) and restarts its
/// peak-memory measurement.
void reset(Device device);

/// Kernel time by the roofline model at the efficiency of its class (KernelEfficiency):
/// max(flops / (compute · peak) + rows · row_overhead, bytes / (memory · bandwidth)) + overhead
/// + cold · cold_overhead + launch overhead, with `cold` the share of a cold start it pays
/// (ColdStarts::run).
double op_seconds(const SimSpec& spec, double flops, double bytes, MathPrecision precision,
                  OpClass op_class, double rows = 0, double cold = 0);
/// A copy of `bytes` between `device` and host memory over its host link: latency +
/// bytes / bandwidth on the device's host stream, after what its compute stream has queued
/// (which makes or last used the data) and, for a download, its comm stream too (a reduced
/// gradient). An upload (`to_device`) holds the compute stream (or UploadsFeed's) until the
/// bytes are there; a download does not. Returns the copy's start.
double host_copy(Device device, double bytes, bool to_device);
/// Work the host does for `device` (ZeRO-Offload's optimizer update on the host): `flops` and
/// `bytes` at the spec's HostSpec rates (the roofline: the larger of the two times), on the
/// device's host stream after what it has queued (the download of the work's data). Nothing
/// when the spec has no host figures. Returns the seconds charged.
double host_compute(Device device, double flops, double bytes);
/// Within its scope (on this thread), uploads hold `stream` instead of the compute stream:
/// the stream that uses the bytes (an FSDP shard in host memory, uploaded for an allgather on
/// the comm stream while compute goes on).
class UploadsFeed {
 public:
  explicit UploadsFeed(Stream stream);  ///< uploads hold `stream` until the scope ends
  ~UploadsFeed();                       ///< back to the stream before
  UploadsFeed(const UploadsFeed&) = delete;
  UploadsFeed& operator=(const UploadsFeed&) = delete;

 private:
  Stream previous_;
};

/// The collectives the cost model prices.
enum class Collective : uint8_t {
  allreduce,
  allgather,
  reduce_scatter,
  broadcast,
  send_recv,
  barrier,
  all_to_all,
};
std::string_view collective_name(Collective kind);  ///< "allreduce", ...
/// Time of a collective over the devices `group` (their indices), `bytes` being the whole
/// buffer (allreduce's input, allgather's output, all-to-all's buffer on each device): the
/// alpha–beta model of the algorithm the communicators run — ring reduce-scatter + allgather
/// for allreduce, ring allgather and reduce-scatter, a binomial tree for broadcast, one
/// message for send/recv, a dissemination barrier, pairwise exchange for all-to-all.
///
/// On Topology::ring, fully_connected and nodes the slowest path between ring neighbours of
/// the group sets alpha and beta. On Topology::torus the collectives are hierarchical, as
/// NCCL's and Neuron's are, over the levels the group spans from the innermost: the devices of
/// a chip (`interconnect`), each torus dimension (a ring), the nodes (`network`). A
/// reduce-scatter runs at each level in turn on what the level before left (a k-th of it after
/// a level of k); allgather is its mirror; allreduce is both (reduce-scatter up, allreduce at
/// the outermost level, allgather back down); all-to-all exchanges the whole buffer at each
/// level ((k-1)/2 of it crosses each link of a ring). Every device of a node is taken to run the
/// same collective at once (SPMD): a chip's links are shared by its devices, the node's network
/// by the node's, and a ring over every g-th chip of a dimension crosses g links a step, each
/// shared by g such rings. A group that is not a product of whole levels (not k_1 x k_2 x ...
/// devices) runs one ring at its slowest level's alpha and beta.
double collective_seconds(const SimSpec& spec, Collective kind, double bytes,
                          std::span<const int> group);

/// The allocator behind a sim or meta device (allocator_for() returns it: device_memory.h).
Allocator& device_allocator(Device device);

}  // namespace dlf::sim
