#include <dlf/device/device.h>
#include <dlf/error.h>

#include <charconv>

namespace dlf {

Device Device::parse(std::string_view text) {
  auto name = text.substr(0, text.find(':'));
  int index = 0;
  if (name.size() < text.size()) {
    auto digits = text.substr(name.size() + 1);
    auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), index);
    DLF_CHECK(ec == std::errc() && end == digits.data() + digits.size() && index >= 0,
              "bad device index in '", text, "': expected e.g. 'sim:0'");
  }
  if (name == "cpu") return {DeviceType::cpu, index};
  if (name == "sim") return {DeviceType::sim, index};
  if (name == "meta") return {DeviceType::meta, index};
  throw Error(detail::concat("unknown device '", text, "': expected cpu, sim[:N] or meta"));
}

std::string Device::str() const {
  static constexpr const char* names[] = {"cpu", "sim", "meta"};
  std::string s = names[static_cast<int>(type)];
  if (index != 0) s.append(":").append(std::to_string(index));
  return s;
}

namespace {
thread_local Device current_default = kCPU;
}  // namespace

Device default_device() { return current_default; }

DefaultDeviceGuard::DefaultDeviceGuard(Device device) : previous_(current_default) {
  current_default = device;
}

DefaultDeviceGuard::~DefaultDeviceGuard() { current_default = previous_; }

}  // namespace dlf
