// Where a tensor lives: the host CPU, a simulated accelerator, or nowhere (meta).
#pragma once
#include <cstdint>
#include <string>
#include <string_view>

namespace dlf {

/// What kind of device.
enum class DeviceType : uint8_t {
  cpu,   ///< numerics on the host
  sim,   ///< a simulated accelerator: host numerics, its own memory, clock and cost model
  meta,  ///< shapes, dtypes and memory accounting only, no data
};

/// A device: its type and index ("sim:3").
struct Device {
  DeviceType type = DeviceType::cpu;  ///< cpu, sim or meta
  int index = 0;                      ///< which one of its type

  /// Parses "cpu", "meta", "sim", "sim:3". Throws dlf::Error on anything else.
  static Device parse(std::string_view text);
  std::string str() const;  ///< "cpu", "sim:3"
  /// False for meta.
  bool has_data() const { return type != DeviceType::meta; }
  /// Same type and index.
  friend bool operator==(const Device&, const Device&) = default;
};

inline const Device kCPU{DeviceType::cpu, 0};    ///< the host
inline const Device kMeta{DeviceType::meta, 0};  ///< shapes only

/// The device tensor factories use when none is named: kCPU unless a DefaultDeviceGuard on
/// this thread says otherwise.
Device default_device();

/// Makes `device` the default of this thread's factories while it lives (torch.device as a
/// context manager). Building a model under kMeta gives its parameters' shapes and dtypes
/// with no memory and no initialisation: then Module::to_empty and load_state_dict.
class DefaultDeviceGuard {
 public:
  explicit DefaultDeviceGuard(Device device);  ///< makes `device` the default until the guard ends
  ~DefaultDeviceGuard();
  DefaultDeviceGuard(const DefaultDeviceGuard&) = delete;
  DefaultDeviceGuard& operator=(const DefaultDeviceGuard&) = delete;

 private:
  Device previous_;
};

}  // namespace dlf
