// The memory behind each device: the host's for the cpu, its own for a sim or meta device.
#pragma once
#include <dlf/device/allocator.h>
#include <dlf/device/device.h>

namespace dlf {

/// The allocator behind a device: host_allocator() for the cpu, sim::device_allocator() for a
/// sim or meta device. Stable for the life of the process.
Allocator& allocator_for(Device device);

}  // namespace dlf
