// `--devices N --device KIND --schedule S`: the devices a command runs its ranks on, and how a
// pipeline over them is scheduled.
#pragma once
#include <string>
#include <vector>

#include <dlf/device/device.h>
#include <dlf/device/sim_spec.h>
#include <dlf/parallel/pipeline.h>

namespace dlf::app {

/// What a `--device` argument names: "cpu", "sim" (a100-40gb), "sim:PRESET", "sim:SPEC.json",
/// "meta:PRESET", or "auto" (cpu for one device, sim for more). dlf::Error for an unknown
/// kind, preset or an unreadable spec.
struct DeviceArg {
  DeviceType type = DeviceType::cpu;
  SimSpec spec;  ///< for sim and meta
};
DeviceArg parse_device_arg(const std::string& arg, int devices = 1);

/// "1f1b" or "gpipe"; dlf::Error for anything else.
parallel::PipelineSchedule parse_schedule(const std::string& arg);

/// `count` devices of `arg`'s kind. Sim and meta devices get the spec, fresh clocks and peaks.
std::vector<Device> setup_devices(int count, const DeviceArg& arg);

}  // namespace dlf::app
