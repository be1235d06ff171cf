#include <dlf/device/sim_system.h>
#include <dlf/error.h>

namespace dlf {

const std::vector<SimSystem>& sim_systems() {
  // The Trainium instances' chips and cores: the Neuron Trn1 and Trn2 architecture pages
  // (bench/data/device_specs.md). The GPU nodes are DGX-style, as their presets are: eight
  // GPUs on NVSwitch, a network port each.
  static const std::vector<SimSystem> all = {
      {"trn1.32xlarge", "trn1", 32, 1, "16 Trainium chips, 32 NeuronCore-v2, EFA 800 Gbps"},
      {"trn1n.32xlarge", "trn1n", 32, 1, "16 Trainium chips, 32 NeuronCore-v2, EFA 1,600 Gbps"},
      {"trn2.48xlarge", "trn2", 16, 1, "16 Trainium2 chips on a 4x4 torus, EFAv3 3,200 Gbps"},
      {"trn2u.48xlarge", "trn2-ultra", 16, 4,
       "16 Trainium2 chips, a quarter of a Trn2 UltraServer (nodes in fours)"},
      {"dgx-a100-40gb", "a100-40gb", 8, 1, "8 A100 SXM4 40GB on NVSwitch"},
      {"dgx-a100-80gb", "a100-80gb", 8, 1, "8 A100 SXM4 80GB on NVSwitch"},
      {"dgx-h100", "h100-80gb", 8, 1, "8 H100 SXM5 on NVSwitch"},
      {"dgx-h200", "h200", 8, 1, "8 H200 SXM on NVSwitch"},
      {"dgx-b200", "b200", 8, 1, "8 B200 on NVSwitch"},
  };
  return all;
}

std::string sim_system_names() {
  std::string names;
  for (const SimSystem& s : sim_systems()) names += (names.empty() ? "" : ", ") + s.name;
  return names;
}

const SimSystem& sim_system(std::string_view name) {
  for (const SimSystem& s : sim_systems()) {
    if (s.name == name) return s;
  }
  throw Error(
      detail::concat("unknown system '", name, "': known systems are ", sim_system_names()));
}

SystemDevices system_devices(std::string_view name, int nodes) {
  const SimSystem& system = sim_system(name);
  DLF_CHECK(nodes > 0 && nodes % system.nodes_multiple == 0, "system ", system.name,
            ": nodes must be a positive multiple of ", system.nodes_multiple, " (got ", nodes, ")",
            system.nodes_multiple > 1 ? ": its nodes come in groups" : "");
  return {sim_preset(system.preset), nodes * system.devices_per_node};
}

}  // namespace dlf
