#include <dlf/device/device_memory.h>
#include <dlf/device/sim_device.h>

namespace dlf {

Allocator& allocator_for(Device device) {
  return device.type == DeviceType::cpu ? host_allocator() : sim::device_allocator(device);
}

}  // namespace dlf
