#include <dlf/device/sim_device.h>
#include <dlf/parallel/device_arg.h>

#include "test_util.h"

namespace dlf {

TEST_CASE("device arg: cpu, sim and meta by preset; auto is cpu for one device, sim for more") {
  CHECK(parallel::parse_device_arg("auto").type == DeviceType::cpu);
  const parallel::DeviceArg two = parallel::parse_device_arg("auto", 2);
  CHECK(two.type == DeviceType::sim);
  CHECK(two.spec.name == "a100-40gb");
  const parallel::DeviceArg meta = parallel::parse_device_arg("meta:h100-80gb");
  CHECK(meta.type == DeviceType::meta);
  CHECK(meta.spec.memory_bytes == sim_preset("h100-80gb").memory_bytes);
  test::check_error([] { parallel::parse_device_arg("gpu"); },
                    {"unknown --device 'gpu'", "expected cpu, sim"});
  const std::vector<Device> devices =
      parallel::setup_devices(2, parallel::parse_device_arg("sim:h100-80gb"));
  REQUIRE(devices.size() == 2);
  CHECK(devices[1].type == DeviceType::sim);
  CHECK(sim::spec_of(devices[1]).name == "h100-80gb");
  test::check_error([] { parallel::setup_devices(0, {}); }, {"--devices must be positive, got 0"});
}

}  // namespace dlf
