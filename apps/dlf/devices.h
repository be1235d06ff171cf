// `--devices N --device KIND`: the devices a command runs its ranks on.
#pragma once
#include <string>
#include <vector>

#include <dlf/device/device.h>

namespace dlf::app {

/// `kind` is "cpu", "sim" (a100-40gb), "sim:PRESET", "sim:SPEC.json", "meta:PRESET" or "auto"
/// (cpu for one device, sim for more). Sim and meta devices get the spec, fresh clocks and
/// peaks. Throws dlf::Error for an unknown kind, preset or unreadable spec.
std::vector<Device> setup_devices(int count, const std::string& kind);

}  // namespace dlf::app
