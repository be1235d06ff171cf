// The presets' figures against the sources cited in device/sim/sim_presets.cpp (and quoted in
// bench/data/device_specs.md), and the topologies they describe.
#include "test_util.h"

namespace dlf {
namespace {

constexpr double GB = 1e9, TB = 1e12, TF = 1e12;
constexpr int64_t GiB = int64_t(1) << 30;

// The chips of a node: the product of the torus's dimensions.
int chips(const SimSpec& s) {
  int n = 1;
  for (const TorusDimension& d : s.torus) n *= d.size;
  return n;
}

// What a chip's links add up to: each dimension's link, both of its neighbours' directions
// counted once (the per-chip figures are split evenly between the dimensions).
double chip_link_bandwidth(const SimSpec& s, size_t first, size_t last) {
  double sum = 0;
  for (size_t i = first; i < last; ++i) sum += s.torus[i].link.bandwidth;
  return sum;
}

}  // namespace

TEST_CASE("sim presets: every name parses, the unknown-preset error lists them all") {
  const std::vector<std::string> names = sim_preset_names();
  for (const char* name :
       {"trn1", "trn1n", "trn2", "trn2-lnc2", "trn2-ultra", "h200", "b200", "h100-80gb"}) {
    CHECK(std::find(names.begin(), names.end(), name) != names.end());
    CHECK(sim_spec_from(name).name == name);
  }
  // what `dlf train --device sim:NAME` says of a name it does not know
  std::vector<std::string> fragments = {"unknown device preset 'trn3'"};
  fragments.insert(fragments.end(), names.begin(), names.end());
  test::check_error([] { sim_spec_from("trn3"); }, fragments);
}

TEST_CASE("sim presets: trn1 and trn1n, a device one NeuronCore-v2 (half a Trainium chip)") {
  const SimSpec trn1 = sim_preset("trn1"), trn1n = sim_preset("trn1n");
  for (const SimSpec& s : {trn1, trn1n}) {
    CHECK(s.peak_flops_bf16 == 190 * TF / 2);
    CHECK(s.peak_flops_f32 == 47.5 * TF / 2);
    CHECK(s.memory_bytes == 32 * GiB / 2);
    CHECK(s.memory_bandwidth == 820.0 * GiB / 2);
    CHECK(s.topology == Topology::torus);
    CHECK(s.devices_per_chip == 2);
    REQUIRE(s.torus.size() == 2);  // a 4 x 4 2D torus of 16 chips, 32 cores a node
    CHECK(s.torus[0].size == 4);
    CHECK(s.torus[1].size == 4);
    CHECK(s.node_size == 32);
    CHECK(s.host.flops == 0);
  }
  CHECK(chip_link_bandwidth(trn1, 0, 2) == 384 * GB);
  CHECK(chip_link_bandwidth(trn1n, 0, 2) == 768 * GB);
  CHECK(trn1.network.bandwidth == 800e9 / 8);  // EFA a node, shared by its 32 cores
  CHECK(trn1n.network.bandwidth == 1600e9 / 8);
}

TEST_CASE("sim presets: trn2 a chip, trn2-lnc2 a logical core, trn2-ultra an UltraServer") {
  const SimSpec chip = sim_preset("trn2"), core = sim_preset("trn2-lnc2"),
                ultra = sim_preset("trn2-ultra");
  CHECK(chip.peak_flops_bf16 == 667 * TF);
  CHECK(chip.peak_flops_f32 == 181 * TF);
  CHECK(chip.memory_bytes == 96 * GiB);
  CHECK(chip.memory_bandwidth == 2.9 * TB);
  CHECK(chip.devices_per_chip == 1);
  CHECK(chips(chip) == 16);
  CHECK(chip.node_size == 16);
  CHECK(chip_link_bandwidth(chip, 0, 2) == 1024 * GB);
  CHECK(chip.network.bandwidth == 3200e9 / 8);
  // LNC=2: four logical cores a chip, each a quarter of it and one 24 GB HBM bank
  CHECK(core.devices_per_chip == 4);
  CHECK(core.node_size == 64);
  CHECK(4 * core.peak_flops_bf16 == doctest::Approx(chip.peak_flops_bf16));
  CHECK(4 * core.memory_bandwidth == doctest::Approx(chip.memory_bandwidth));
  CHECK(core.memory_bytes == 24 * GiB);
  CHECK(chip_link_bandwidth(core, 0, 2) == 1024 * GB);  // the chip's, shared by its cores
  // four trn2u.48xlarge, chips at equal coordinates on rings of 4 over 256 GB/s a chip
  REQUIRE(ultra.torus.size() == 3);
  CHECK(chips(ultra) == 64);
  CHECK(ultra.node_size == 64);
  CHECK(chip_link_bandwidth(ultra, 0, 2) == 1024 * GB);
  CHECK(ultra.torus[2].size == 4);
  CHECK(ultra.torus[2].link.bandwidth == 256 * GB);
  CHECK(ultra.network.bandwidth == 4 * 3200e9 / 8);
  CHECK(ultra.peak_flops_bf16 == chip.peak_flops_bf16);
}

TEST_CASE("sim presets: h200 and b200, eight to a node on NVSwitch") {
  const SimSpec h200 = sim_preset("h200"), b200 = sim_preset("b200"),
                h100 = sim_preset("h100-80gb");
  CHECK(h200.memory_bytes == int64_t(141 * GB));
  CHECK(h200.memory_bandwidth == 4.8 * TB);
  CHECK(h200.peak_flops_bf16 == 989 * TF);  // the H100's silicon
  CHECK(h200.interconnect.bandwidth == h100.interconnect.bandwidth);
  CHECK(b200.memory_bytes == int64_t(1440 * GB / 8));
  CHECK(b200.memory_bandwidth == 8 * TB);
  CHECK(b200.peak_flops_bf16 == 2250 * TF);
  CHECK(b200.interconnect.bandwidth == 1.8 * TB / 2);  // NVLink 5, each direction
  CHECK(b200.network.bandwidth == 400e9 / 8);          // a ConnectX-7 a GPU
  CHECK(b200.host.flops == doctest::Approx(2 * 56 * 2.1e9 * 64 / 8));
  for (const SimSpec& s : {h200, b200}) {
    CHECK(s.topology == Topology::nodes);
    CHECK(s.node_size == 8);
  }
}

TEST_CASE("sim spec: a torus's figures are checked") {
  SimSpec s = sim_preset("trn1");
  s.node_size = 16;
  test::check_error([&] { s.validate(); }, {"node_size 16", "= 32"});
  s = sim_preset("trn1");
  s.torus[1].link.bandwidth = 0;
  test::check_error([&] { s.validate(); }, {"torus dimension", "link bandwidth"});
  s.torus.clear();
  test::check_error([&] { s.validate(); }, {"at least one dimension"});
  // A spec file names its torus; one from before torus topologies loads as before.
  std::string json = to_json(sim_preset("trn2-ultra"));
  CHECK(json.find("\"topology\": \"torus\"") != std::string::npos);
  CHECK(sim_spec_from_json(json).torus.size() == 3);
  std::string before = to_json(sim_preset("a100-40gb"));
  for (const std::string field : {"torus", "devices_per_chip"}) {
    const size_t at = before.find(",\n        \"" + field + "\"");
    REQUIRE(at != std::string::npos);
    before.erase(at + 1, before.find('\n', at + 2) - at - 1);  // the line, its comma
  }
  INFO(before);
  const SimSpec a100 = sim_spec_from_json(before);
  CHECK(a100.torus.empty());
  CHECK(a100.devices_per_chip == 1);
  CHECK(a100.network.bandwidth == sim_preset("a100-40gb").network.bandwidth);
}

}  // namespace dlf
