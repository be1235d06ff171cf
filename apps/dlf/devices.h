// `--devices N --device KIND`: the devices a command runs its ranks on.
#pragma once
#include <string>
#include <vector>

#include <dlf/device/device.h>
#include <dlf/device/sim_spec.h>

namespace dlf::app {

/// What a `--device` argument names: "cpu", "sim" (a100-40gb), "sim:PRESET", "sim:SPEC.json",
/// "meta:PRESET", or "auto" (cpu for one device, sim for more). dlf::Error for an unknown
/// kind, preset or an unreadable spec.
struct DeviceArg {
  DeviceType type = DeviceType::cpu;
  SimSpec spec;  ///< for sim and meta
};
DeviceArg parse_device_arg(const std::string& arg, int devices = 1);

/// `count` devices of `arg`'s kind. Sim and meta devices get the spec, fresh clocks and peaks.
std::vector<Device> setup_devices(int count, const DeviceArg& arg);

}  // namespace dlf::app
