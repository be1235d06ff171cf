// Host memory: where what leaves a device goes (offload). The cpu's for cpu and sim devices; for
// meta devices a meta device of its own, so a planner offloads shapes only and a copy between
// the two crosses the device's host link as a sim device's does.
#pragma once
#include <dlf/device/device.h>

namespace dlf {

/// Host memory with shapes only: where a meta device offloads to (a planner's host).
inline constexpr Device kMetaHost{DeviceType::meta, 63};

/// Whether `device` is host memory: the cpu, or kMetaHost.
inline bool is_host(Device device) { return device.type == DeviceType::cpu || device == kMetaHost; }

/// The host memory `device` offloads to: kMetaHost for a meta device, else the cpu.
inline Device host_of(Device device) { return device.has_data() ? kCPU : kMetaHost; }

}  // namespace dlf
