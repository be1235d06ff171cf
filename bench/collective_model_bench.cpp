// The collective cost model's bus bandwidth, preset by preset, against the closed form of a
// flat ring over the slowest link the group crosses (ring allreduce: 2(n-1)/n of the buffer
// over that link, 2(n-1) latencies). Nothing is timed: both sides are arithmetic. A ratio
// above 1 is what a hierarchy gains over that ring (the slow link carries a share of the
// buffer); 1 is a flat ring (a switch, or one level of a torus).
//
//   build/release/bench/collective_model_bench [--mib 256] [--presets trn1,h100-80gb]
#include <cmath>
#include <cstdio>
#include <sstream>

#include <dlf/device/sim_device.h>
#include <dlf/error.h>

#include "bench/bench_cli.h"
#include "bench/bench_json.h"

namespace dlf {
namespace {

using sim::Collective;

constexpr Collective kCollectives[] = {Collective::allreduce, Collective::allgather,
                                       Collective::reduce_scatter, Collective::all_to_all,
                                       Collective::send_recv};

// The bytes a device moves over its slowest link per byte of the buffer, on a ring of n
// (nccl-tests' bus bandwidth factors): bus bandwidth = factor x bytes / time.
double bus_factor(Collective kind, int n) {
  switch (kind) {
    case Collective::allreduce:
      return 2.0 * (n - 1) / n;
    case Collective::allgather:
    case Collective::reduce_scatter:
    case Collective::all_to_all:
      return double(n - 1) / n;
    default:
      return 1;
  }
}

// The slowest link a device of `group` (n consecutive devices from 0, or one a node when
// `one_a_node`) crosses, as its own share: the chip's link between its devices, a torus
// dimension's a chip shares among its devices, the network a node's devices share.
LinkSpec slowest_link(const SimSpec& s, int n, bool one_a_node) {
  if (s.topology == Topology::nodes)
    return one_a_node || n > s.node_size ? s.network : s.interconnect;
  if (s.topology != Topology::torus) return s.interconnect;
  if (one_a_node || n > s.node_size) return {s.network.bandwidth / s.node_size, s.network.latency};
  LinkSpec slowest = {INFINITY, 0};
  if (n > 1 && s.devices_per_chip > 1) slowest = s.interconnect;
  int span = s.devices_per_chip;  // devices the dimensions so far hold
  for (const TorusDimension& d : s.torus) {
    if (n > span) {
      slowest = {std::min(slowest.bandwidth, d.link.bandwidth / s.devices_per_chip),
                 std::max(slowest.latency, d.link.latency)};
    }
    span *= d.size;
  }
  return slowest;
}

// The flat ring's closed form over `link`: reduce-scatter and allgather (n-1 steps of an n-th
// each), allreduce both; pairwise all-to-all as a reduce-scatter; send/recv one message.
double closed_form_seconds(Collective kind, double bytes, int n, LinkSpec link) {
  const double step = link.latency + bytes / n / link.bandwidth;
  if (kind == Collective::send_recv) return link.latency + bytes / link.bandwidth;
  return (kind == Collective::allreduce ? 2 : 1) * (n - 1) * step;
}

void run_preset(const std::string& name, double bytes) {
  const SimSpec spec = sim_preset(name);
  const int node = spec.node_size;
  std::vector<std::pair<int, bool>> groups = {{2, false}, {8, false}};  // (n, one a node)
  if (node > 8) groups.push_back({node, false});
  groups.insert(groups.end(), {{2 * node, false}, {8 * node, false}, {8, true}});
  for (const auto& [n, one_a_node] : groups) {
    std::vector<int> group;
    for (int i = 0; i < n; ++i) group.push_back(one_a_node ? i * node : i);
    const LinkSpec link = slowest_link(spec, n, one_a_node);
    for (const Collective kind : kCollectives) {
      const int members = kind == Collective::send_recv ? 2 : n;
      if (kind == Collective::send_recv && n != 2 && !one_a_node) continue;
      const std::span<const int> used(group.data(), size_t(members));
      const double modelled = sim::collective_seconds(spec, kind, bytes, used);
      const double closed = closed_form_seconds(kind, bytes, members, link);
      const double factor = bus_factor(kind, members) * bytes / 1e9;
      std::ostringstream label;
      label << name << " " << sim::collective_name(kind) << " " << members
            << (one_a_node ? " devices, one a node, " : " devices, ") << bytes / (1 << 20)
            << " MiB";
      bench::JsonLine line;
      line.add("bench", "collective")
          .add("case", label.str())
          .add("impl", "sim")
          .add("threads", 1)
          .add("metric", "bus_bandwidth")
          .add("value", factor / modelled)
          .add("unit", "GB/s")
          .add("baseline_impl", "closed-form ring over the slowest link")
          .add("baseline", factor / closed)
          .add("ratio", closed / modelled)
          .add("modelled_ms", modelled * 1e3)
          .add("closed_form_ms", closed * 1e3);
      std::printf("%s\n", line.str().c_str());
    }
  }
}

}  // namespace
}  // namespace dlf

int main(int argc, char** argv) try {
  CLI::App app{"The collective cost model's bus bandwidth against a flat ring's closed form"};
  double mib = 256;
  std::string presets = "trn1,trn1n,trn2,trn2-lnc2,trn2-ultra,a100-40gb,h100-80gb,h200,b200";
  app.add_option("--mib", mib, "the buffer, MiB")->check(CLI::PositiveNumber);
  app.add_option("--presets", presets, "comma-separated sim presets");
  dlf::bench::parse_or_exit(app, argc, argv);
  std::stringstream names(presets);
  for (std::string name; std::getline(names, name, ',');) dlf::run_preset(name, mib * (1 << 20));
  return 0;
} catch (const dlf::Error& e) {
  std::fprintf(stderr, "collective_model_bench: %s\n", e.what());
  return 1;
}
