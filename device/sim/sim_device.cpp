#include <dlf/device/sim_device.h>
#include <dlf/device/trace.h>
#include <dlf/error.h>
#include "device/sim/collective_cost.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <deque>
#include <memory>
#include <mutex>

namespace dlf::sim {

double Timeline::run(Stream stream, double seconds, double not_before) {
  double& now = now_[static_cast<int>(stream)];
  const double start = std::max(now, not_before);
  now = start + seconds;
  return start;
}

void Timeline::wait(Stream stream, Event event) {
  double& now = now_[static_cast<int>(stream)];
  now = std::max(now, event.time);
}

namespace {

// The device's memory: capacity from its spec, data in host memory (sim) or nowhere (meta).
class SimAllocator final : public Allocator {
 public:
  SimAllocator(Device device, const SimSpec* spec, const Timeline* clock)
      : device_(device), spec_(spec), clock_(clock) {}

  void* allocate(size_t bytes, MemoryCategory category) override {
    const MemoryStats before = stats();
    const int64_t capacity = spec_->memory_bytes;
    if (capacity > 0 && before.live_bytes + static_cast<int64_t>(bytes) > capacity) {
      throw OutOfMemory(detail::concat(
          device_.str(), " (", spec_->name, ") is out of memory: allocating ",
          format_bytes(static_cast<double>(bytes)), " for ", memory_category_name(category),
          " with ", format_bytes(static_cast<double>(before.live_bytes)), " of ",
          format_bytes(static_cast<double>(capacity)),
          " in use (live: ", format_by_category(before.live_by), ")"));
    }
    void* ptr = device_.has_data() ? host_allocator().allocate(bytes, category) : nullptr;
    const int64_t live = count_alloc(bytes, category);
    if (trace::enabled()) trace::counter(device_, "memory", clock_->now(Stream::compute), live);
    return ptr;
  }

  void deallocate(void* ptr, size_t bytes, MemoryCategory category) override {
    if (ptr != nullptr) host_allocator().deallocate(ptr, bytes, category);
    count_free(bytes, category);
    if (trace::enabled())
      trace::counter(device_, "memory", clock_->now(Stream::compute), stats().live_bytes);
  }

 private:
  Device device_;
  const SimSpec* spec_;
  const Timeline* clock_;
};

struct DeviceState {
  explicit DeviceState(Device device, SimSpec s)
      : spec(std::move(s)), allocator(device, &spec, &clock) {}
  SimSpec spec;
  Timeline clock;
  ColdStarts cold_starts;
  SimAllocator allocator;
};

struct Registry {
  std::mutex mutex;
  std::deque<std::unique_ptr<DeviceState>> sim, meta;
};

Registry& registry() {
  static Registry r;
  return r;
}

SimSpec default_spec(DeviceType type) {
  SimSpec spec = sim_preset("a100-40gb");
  if (type == DeviceType::meta) spec.memory_bytes = 0;
  return spec;
}

DeviceState& state(Device device) {
  DLF_CHECK(device.type != DeviceType::cpu, "the cpu device has no simulated state");
  Registry& r = registry();
  std::lock_guard lock(r.mutex);
  auto& states = device.type == DeviceType::sim ? r.sim : r.meta;
  while (states.size() <= static_cast<size_t>(device.index)) {
    Device d{device.type, static_cast<int>(states.size())};
    states.push_back(std::make_unique<DeviceState>(d, default_spec(device.type)));
  }
  return *states[device.index];
}

}  // namespace

void configure(Device device, const SimSpec& spec) {
  spec.validate();
  state(device).spec = spec;
}

const SimSpec& spec_of(Device device) { return state(device).spec; }
Timeline& timeline(Device device) { return state(device).clock; }
ColdStarts& cold_starts(Device device) { return state(device).cold_starts; }
Allocator& device_allocator(Device device) { return state(device).allocator; }

void reset(Device device) {
  DeviceState& s = state(device);
  s.clock = Timeline{};
  s.cold_starts = ColdStarts{};
  s.allocator.reset_peak();
}

double op_seconds(const SimSpec& spec, double flops, double bytes, MathPrecision precision,
                  OpClass op_class, double rows, double cold) {
  const KernelEfficiency& e = spec.efficiency[static_cast<size_t>(op_class)];
  return std::max(flops / (e.compute * spec.peak_flops(precision)) + rows * e.row_overhead,
                  bytes / (e.memory * spec.memory_bandwidth)) +
         e.overhead + cold * e.cold_overhead + spec.launch_overhead;
}

double host_compute(Device device, double flops, double bytes) {
  const HostSpec& host = spec_of(device).host;
  if (host.flops <= 0 || host.memory_bandwidth <= 0) return 0;
  const double seconds = std::max(flops / host.flops, bytes / host.memory_bandwidth);
  timeline(device).run(Stream::host, seconds);
  return seconds;
}

namespace {
thread_local Stream upload_consumer = Stream::compute;  // UploadsFeed
}  // namespace

UploadsFeed::UploadsFeed(Stream stream) : previous_(upload_consumer) { upload_consumer = stream; }
UploadsFeed::~UploadsFeed() { upload_consumer = previous_; }

double host_copy(Device device, double bytes, bool to_device) {
  const LinkSpec& link = spec_of(device).host_link;
  const double seconds = link.latency + bytes / link.bandwidth;
  Timeline& clock = timeline(device);
  // A download's data may come from a collective (a reduced gradient) as well as a kernel.
  const double made = to_device ? clock.now(Stream::compute)
                                : std::max(clock.now(Stream::compute), clock.now(Stream::comm));
  const double start = clock.run(Stream::host, seconds, made);
  if (to_device) clock.wait(upload_consumer, {start + seconds});
  return start;
}

std::string_view collective_name(Collective kind) {
  static constexpr std::string_view names[] = {"allreduce", "allgather", "reduce_scatter",
                                               "broadcast", "send_recv", "barrier",
                                               "all_to_all"};
  return names[static_cast<int>(kind)];
}

namespace {
// The path a message between devices a and b takes: one link, or |a - b| of them on a ring.
LinkSpec path_between(const SimSpec& spec, int a, int b) {
  switch (spec.topology) {
    case Topology::ring:
      return {spec.interconnect.bandwidth, spec.interconnect.latency * std::abs(a - b)};
    case Topology::nodes:
      return a / spec.node_size != b / spec.node_size ? spec.network : spec.interconnect;
    case Topology::fully_connected:
    case Topology::torus:
      break;
  }
  return spec.interconnect;
}
}  // namespace

namespace internal {

double ring_seconds(Collective kind, double bytes, int n, LinkSpec slowest) {
  const double alpha = slowest.latency, beta = slowest.bandwidth;
  const double log_n = std::ceil(std::log2(n));
  switch (kind) {
    case Collective::allreduce:
      return 2.0 * (n - 1) * (alpha + bytes / n / beta);
    case Collective::allgather:
    case Collective::reduce_scatter:
    case Collective::all_to_all:
      return (n - 1) * (alpha + bytes / n / beta);
    case Collective::broadcast:
      return log_n * (alpha + bytes / beta);
    case Collective::send_recv:
      return alpha + bytes / beta;
    case Collective::barrier:
      return log_n * alpha;
  }
  return 0;
}

}  // namespace internal

double collective_seconds(const SimSpec& spec, Collective kind, double bytes,
                          std::span<const int> group) {
  const int n = static_cast<int>(group.size());
  if (n <= 1) return 0;
  if (spec.topology == Topology::torus)
    return internal::torus_collective_seconds(spec, kind, bytes, group);
  // The slowest path between ring neighbours bounds every step of the ring.
  LinkSpec link = spec.interconnect;
  // Between nodes no path is slower than the slower of the two links: once there, the rest of
  // a large group (a planner's dp group of thousands) need not be walked.
  const double least_bandwidth = std::min(spec.network.bandwidth, spec.interconnect.bandwidth);
  const double most_latency = std::max(spec.network.latency, spec.interconnect.latency);
  for (int i = 0; i < n; ++i) {
    const LinkSpec l = path_between(spec, group[i], group[(i + 1) % n]);
    if (l.bandwidth < link.bandwidth) link.bandwidth = l.bandwidth;
    link.latency = std::max(link.latency, l.latency);
    if (spec.topology == Topology::nodes && link.bandwidth <= least_bandwidth &&
        link.latency >= most_latency)
      break;
  }
  return internal::ring_seconds(kind, bytes, n, link);
}

}  // namespace dlf::sim
