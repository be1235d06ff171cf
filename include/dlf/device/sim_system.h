// Machines by the names one rents or buys them under (trn1.32xlarge, dgx-h100): the preset of
// their devices and how many a node holds, so that a plan can be asked for "32 trn1.32xlarge".
#pragma once
#include <string>
#include <string_view>
#include <vector>

#include <dlf/device/sim_spec.h>

namespace dlf {

/// A machine by name: its devices' preset and how many devices a node (an instance) holds.
struct SimSystem {
  std::string name;          ///< "trn1.32xlarge", "dgx-h100", ...
  std::string preset;        ///< the sim_preset() of its devices
  int devices_per_node = 0;  ///< devices an instance holds
  /// Nodes come in groups of this many (a Trn2 UltraServer is four trn2u.48xlarge)
  int nodes_multiple = 1;
  std::string description;  ///< what a node is, in a few words
};

/// The systems sim_system() knows, in a fixed order.
const std::vector<SimSystem>& sim_systems();
/// Their names, comma-separated, in that order ("trn1.32xlarge, trn1n.32xlarge, ...").
std::string sim_system_names();
/// The system named `name`; a dlf::Error lists the known names when it is unknown.
const SimSystem& sim_system(std::string_view name);

/// `nodes` nodes of a system: its devices' spec and how many devices there are in all.
struct SystemDevices {
  SimSpec spec;     ///< sim_preset(system.preset)
  int devices = 0;  ///< nodes x devices_per_node
};
/// The devices of `nodes` nodes of the system `name`; a dlf::Error for an unknown system or a
/// number of nodes it does not come in.
SystemDevices system_devices(std::string_view name, int nodes);

}  // namespace dlf
