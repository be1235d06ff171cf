#include "devices.h"

#include <dlf/device/sim_device.h>
#include <dlf/error.h>
#include <dlf/parallel/launch.h>

namespace dlf::app {

DeviceArg parse_device_arg(const std::string& arg) {
  if (arg == "cpu") return {};
  const std::string type = arg.substr(0, arg.find(':'));
  DLF_CHECK(type == "sim" || type == "meta", "unknown --device '", arg,
            "': expected cpu, sim, sim:PRESET, sim:SPEC.json or meta:PRESET");
  const std::string preset = type.size() < arg.size() ? arg.substr(type.size() + 1) : "a100-40gb";
  return {type == "sim" ? DeviceType::sim : DeviceType::meta, sim_spec_from(preset)};
}

std::vector<Device> setup_devices(int count, const std::string& kind) {
  DLF_CHECK(count > 0, "--devices must be positive, got ", count);
  const DeviceArg arg = parse_device_arg(kind == "auto" ? (count == 1 ? "cpu" : "sim") : kind);
  std::vector<Device> devices = parallel::devices_of(arg.type, count);
  if (arg.type == DeviceType::cpu) return devices;
  for (Device d : devices) {
    sim::configure(d, arg.spec);
    sim::reset(d);
  }
  return devices;
}

}  // namespace dlf::app
