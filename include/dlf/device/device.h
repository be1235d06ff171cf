// Where a tensor lives: the host CPU, a simulated accelerator, or nowhere (meta).
#pragma once
#include <cstdint>
#include <string>
#include <string_view>

namespace dlf {

enum class DeviceType : uint8_t {
  cpu,   ///< numerics on the host
  sim,   ///< a simulated accelerator: host numerics, its own memory, clock and cost model
  meta,  ///< shapes, dtypes and memory accounting only, no data
};

struct Device {
  DeviceType type = DeviceType::cpu;
  int index = 0;

  /// Parses "cpu", "meta", "sim", "sim:3". Throws dlf::Error on anything else.
  static Device parse(std::string_view text);
  std::string str() const;
  bool has_data() const { return type != DeviceType::meta; }
  friend bool operator==(const Device&, const Device&) = default;
};

inline const Device kCPU{DeviceType::cpu, 0};
inline const Device kMeta{DeviceType::meta, 0};

/// The device tensor factories use when none is named: kCPU unless a DefaultDeviceGuard on
/// this thread says otherwise.
Device default_device();

/// Makes `device` the default of this thread's factories while it lives (torch.device as a
/// context manager). Building a model under kMeta gives its parameters' shapes and dtypes
/// with no memory and no initialisation: then Module::to_empty and load_state_dict.
class DefaultDeviceGuard {
 public:
  explicit DefaultDeviceGuard(Device device);
  ~DefaultDeviceGuard();
  DefaultDeviceGuard(const DefaultDeviceGuard&) = delete;
  DefaultDeviceGuard& operator=(const DefaultDeviceGuard&) = delete;

 private:
  Device previous_;
};

}  // namespace dlf
