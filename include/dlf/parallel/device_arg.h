// `--devices N --device KIND`: the devices a command runs its ranks on (one rank a device).
#pragma once
#include <string>
#include <vector>

#include <dlf/device/device.h>
#include <dlf/device/sim_spec.h>

namespace dlf::parallel {

/// What a `--device` argument names.
struct DeviceArg {
  DeviceType type = DeviceType::cpu;  ///< cpu, sim or meta
  SimSpec spec;                       ///< for sim and meta
};
/// "cpu", "sim" (a100-40gb), "sim:PRESET", "sim:SPEC.json", "meta:PRESET", or "auto" (cpu for
/// one of `devices`, sim for more). dlf::Error for an unknown kind, preset or an unreadable spec.
DeviceArg parse_device_arg(const std::string& arg, int devices = 1);

/// The in-process ranks a run may have (they are threads).
inline constexpr int kMaxRanks = 1024;

/// How many ranks a run has: under mpirun one a process (`devices`, when given, must be their
/// number), else `devices`, or dp x tp x pp of the layout asked for (0s: not asked), or 1. A
/// dlf::Error for more than kMaxRanks.
int count_ranks(int devices, int dp, int tp, int pp);

/// `count` devices of `arg`'s kind. Sim and meta devices get the spec, fresh clocks and peaks.
std::vector<Device> setup_devices(int count, const DeviceArg& arg);

}  // namespace dlf::parallel
