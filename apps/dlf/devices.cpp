#include "devices.h"

#include <dlf/device/sim_device.h>
#include <dlf/error.h>
#include <dlf/parallel/launch.h>

namespace dlf::app {

std::vector<Device> setup_devices(int count, const std::string& kind) {
  DLF_CHECK(count > 0, "--devices must be positive, got ", count);
  const std::string k = kind == "auto" ? (count == 1 ? "cpu" : "sim") : kind;
  if (k == "cpu") return parallel::devices_of(DeviceType::cpu, count);
  const std::string type = k.substr(0, k.find(':'));
  DLF_CHECK(type == "sim" || type == "meta", "unknown --device '", kind,
            "': expected cpu, sim, sim:PRESET, sim:SPEC.json or meta:PRESET");
  const std::string preset = type.size() < k.size() ? k.substr(type.size() + 1) : "a100-40gb";
  const SimSpec spec = sim_spec_from(preset);
  std::vector<Device> devices =
      parallel::devices_of(type == "sim" ? DeviceType::sim : DeviceType::meta, count);
  for (Device d : devices) {
    sim::configure(d, spec);
    sim::reset(d);
  }
  return devices;
}

}  // namespace dlf::app
