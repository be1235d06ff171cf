#include <dlf/device/sim_system.h>

#include "test_util.h"

namespace dlf {

TEST_CASE("sim systems: a named machine and a count of nodes give the devices and their spec") {
  const SystemDevices trn1 = system_devices("trn1.32xlarge", 32);
  CHECK(trn1.spec.name == "trn1");
  CHECK(trn1.devices == 32 * 32);  // 16 chips of 2 NeuronCore-v2 a node
  CHECK(system_devices("trn2.48xlarge", 2).devices == 32);
  CHECK(system_devices("dgx-h100", 4).devices == 32);
  CHECK(system_devices("dgx-b200", 1).spec.name == "b200");
  // UltraServers: four trn2u.48xlarge joined by NeuronLink rings, so nodes in fours
  const SystemDevices ultra = system_devices("trn2u.48xlarge", 8);
  CHECK(ultra.spec.name == "trn2-ultra");
  CHECK(ultra.devices == 128);
  test::check_error([] { system_devices("trn2u.48xlarge", 6); },
                    {"trn2u.48xlarge", "multiple of 4", "got 6"});
  test::check_error([] { system_devices("trn1.32xlarge", 0); }, {"positive", "got 0"});
  std::vector<std::string> fragments = {"unknown system 'trn3.48xlarge'"};
  for (const SimSystem& s : sim_systems()) fragments.push_back(s.name);
  test::check_error([] { sim_system("trn3.48xlarge"); }, fragments);
}

TEST_CASE("sim systems: each names a preset whose node is its node (or a group of them)") {
  for (const SimSystem& s : sim_systems()) {
    INFO(s.name);
    const SimSpec spec = sim_preset(s.preset);
    CHECK(spec.node_size == s.devices_per_node * s.nodes_multiple);
    CHECK(!s.description.empty());
  }
}

}  // namespace dlf
