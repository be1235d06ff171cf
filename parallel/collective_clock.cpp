#include "parallel/collective_clock.h"

#include <dlf/device/allocator.h>
#include <dlf/device/trace.h>

#include <algorithm>
#include <map>
#include <mutex>

namespace dlf::parallel {

namespace {

struct TotalsRegistry {
  std::mutex mutex;
  std::map<std::pair<DeviceType, int>, CommTotals> by_device;
};
TotalsRegistry& totals_registry() {
  static TotalsRegistry r;
  return r;
}

// The bytes a rank sends in a collective over `n` ranks of a buffer of `bytes`.
double bytes_sent(sim::Collective kind, double bytes, size_t n) {
  const double share = n > 1 ? double(n - 1) / double(n) : 0;
  switch (kind) {
    case sim::Collective::allreduce:
      return 2 * share * bytes;
    case sim::Collective::allgather:
    case sim::Collective::reduce_scatter:
    case sim::Collective::all_to_all:
      return share * bytes;
    case sim::Collective::broadcast:
    case sim::Collective::send_recv:
      return n > 1 ? bytes : 0;
    case sim::Collective::barrier:
      return 0;
  }
  return 0;
}

void add_totals(Device device, double bytes, double seconds) {
  TotalsRegistry& r = totals_registry();
  std::lock_guard lock(r.mutex);
  CommTotals& t = r.by_device[{device.type, device.index}];
  t.bytes_sent += bytes;
  t.seconds += seconds;
}

}  // namespace

CommTotals comm_totals(Device device) {
  TotalsRegistry& r = totals_registry();
  std::lock_guard lock(r.mutex);
  auto it = r.by_device.find({device.type, device.index});
  return it == r.by_device.end() ? CommTotals{} : it->second;
}

void Communicator::wait(const Work& work) {
  if (device().type == DeviceType::cpu) return;
  const double before = detail::compute_time(device());
  sim::timeline(device()).wait(sim::Stream::compute, work.done);
  seconds_.exposed += detail::compute_time(device()) - before;
}

namespace detail {
namespace {

// "allreduce dp 12.0 MiB": a collective's span in a trace, and its args.
std::string collective_span_name(sim::Collective kind, std::string_view group, double bytes) {
  return ::dlf::detail::concat(sim::collective_name(kind), " ", group, " ", format_bytes(bytes));
}
std::string collective_span_args(double bytes, size_t ranks) {
  return ::dlf::detail::concat("\"bytes\":", static_cast<int64_t>(bytes), ",\"ranks\":", ranks);
}

}  // namespace

double compute_time(Device device) {
  return device.type == DeviceType::cpu ? 0 : sim::timeline(device).now(sim::Stream::compute);
}

double ready_time(Device device) {
  if (device.type == DeviceType::cpu) return trace::enabled() ? trace::now() : 0;
  const sim::Timeline& clock = sim::timeline(device);
  return std::max(clock.now(sim::Stream::compute), clock.now(sim::Stream::comm));
}

Work run_collective(Device self, sim::Collective kind, double bytes, std::span<const int> group,
                    double start, bool async, std::string_view group_name, int peer) {
  if (self.type == DeviceType::cpu) {  // done by now: its wall-clock span, when tracing
    if (trace::enabled()) {
      trace::span(self, sim::Stream::comm, collective_span_name(kind, group_name, bytes), start,
                  trace::now() - start, collective_span_args(bytes, group.size()));
    }
    return {};
  }
  const int pair[] = {self.index, peer >= 0 ? group[peer] : 0};
  if (peer >= 0) group = pair;
  const double seconds = sim::collective_seconds(sim::spec_of(self), kind, bytes, group);
  sim::Timeline& clock = sim::timeline(self);
  const double begin = clock.run(sim::Stream::comm, seconds, start);
  const Work work{{begin}, {begin + seconds}};
  add_totals(self, bytes_sent(kind, bytes, group.size()), seconds);
  if (!async) clock.wait(sim::Stream::compute, work.done);
  if (trace::enabled()) {
    trace::span(self, sim::Stream::comm, collective_span_name(kind, group_name, bytes), begin,
                seconds, collective_span_args(bytes, group.size()));
  }
  return work;
}

}  // namespace detail
}  // namespace dlf::parallel
