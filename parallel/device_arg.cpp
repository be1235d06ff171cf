#include <dlf/parallel/device_arg.h>

#include <dlf/device/sim_device.h>
#include <dlf/error.h>
#include <dlf/parallel/launch.h>
#include <dlf/parallel/mpi.h>

#include <algorithm>

namespace dlf::parallel {

DeviceArg parse_device_arg(const std::string& arg, int devices) {
  if (arg == "auto") return parse_device_arg(devices == 1 ? "cpu" : "sim");
  if (arg == "cpu") return {};
  const std::string type = arg.substr(0, arg.find(':'));
  DLF_CHECK(type == "sim" || type == "meta", "unknown --device '", arg,
            "': expected cpu, sim, sim:PRESET, sim:SPEC.json or meta:PRESET");
  const std::string preset = type.size() < arg.size() ? arg.substr(type.size() + 1) : "a100-40gb";
  return {type == "sim" ? DeviceType::sim : DeviceType::meta, sim_spec_from(preset)};
}

std::vector<Device> setup_devices(int count, const DeviceArg& arg) {
  DLF_CHECK(count > 0, "--devices must be positive, got ", count);
  std::vector<Device> devices = devices_of(arg.type, count);
  if (arg.type == DeviceType::cpu) return devices;
  for (Device d : devices) {
    sim::configure(d, arg.spec);
    sim::reset(d);
  }
  return devices;
}

int count_ranks(int devices, int dp, int tp, int pp) {
  if (launched_by_mpi()) {
    DLF_CHECK(devices == 0 || devices == mpi_world_size(), "under mpirun every process is one ",
              "rank: leave out --devices (or give mpirun's -np, ", mpi_world_size(),
              "); processes x in-process devices are not supported");
    return mpi_world_size();
  }
  const int64_t given = dp > 0 || tp > 0 || pp > 0  // each at most kMaxRanks
                            ? int64_t(std::max(dp, 1)) * std::max(tp, 1) * std::max(pp, 1)
                            : 0;
  DLF_CHECK(given <= kMaxRanks, "dp x tp x pp = ", given, " ranks; a run has at most ", kMaxRanks,
            " (they are threads of this process)");
  return devices > 0 ? devices : (given > 0 ? int(given) : 1);
}

}  // namespace dlf::parallel
