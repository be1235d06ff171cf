#include <dlf/device/sim_spec.h>
#include <dlf/error.h>

#include <cereal/archives/json.hpp>
#include <cereal/types/string.hpp>
#include <cereal/types/vector.hpp>
#include <fstream>
#include <sstream>
#include <type_traits>

namespace dlf {

template <class Archive>
void serialize(Archive& ar, LinkSpec& l) {
  ar(cereal::make_nvp("bandwidth", l.bandwidth), cereal::make_nvp("latency", l.latency));
}

template <class Archive>
void serialize(Archive& ar, HostSpec& h) {
  ar(cereal::make_nvp("flops", h.flops), cereal::make_nvp("memory_bandwidth", h.memory_bandwidth));
}

template <class Archive>
void serialize(Archive& ar, TorusDimension& d) {
  ar(cereal::make_nvp("size", d.size), cereal::make_nvp("link", d.link));
}

template <class Archive>
std::string save_minimal(const Archive&, const Topology& t) {
  static constexpr const char* names[] = {"ring", "fully_connected", "nodes", "torus"};
  return names[static_cast<int>(t)];
}

template <class Archive>
void load_minimal(const Archive&, Topology& t, const std::string& name) {
  if (name == "ring")
    t = Topology::ring;
  else if (name == "fully_connected")
    t = Topology::fully_connected;
  else if (name == "nodes")
    t = Topology::nodes;
  else if (name == "torus")
    t = Topology::torus;
  else
    throw Error("unknown topology '" + name + "': expected ring, fully_connected, nodes or torus");
}

namespace {

// A field spec files may leave out (those written before it existed): absent, it keeps its
// default. Only its own absence is forgiven: cereal's lookup of a name throws before it enters
// anything, so the archive stays where it was; any other error (a field missing inside it, a
// wrong type) has left the archive inside the field and goes on up.
template <class Archive, class T>
void optional_field(Archive& ar, const char* name, T& value) {
  if constexpr (std::is_same_v<Archive, cereal::JSONInputArchive>) {
    try {
      ar(cereal::make_nvp(name, value));
    } catch (const cereal::Exception& e) {
      const std::string absent = std::string("provided NVP (") + name + ") not found";
      if (std::string_view(e.what()).find(absent) == std::string_view::npos) throw;
    }
  } else {
    ar(cereal::make_nvp(name, value));
  }
}

}  // namespace

// Each figure may be left out: it keeps the peaks' (1, 1, 0, 0, 0).
template <class Archive>
void serialize(Archive& ar, KernelEfficiency& e) {
  optional_field(ar, "compute", e.compute);
  optional_field(ar, "memory", e.memory);
  optional_field(ar, "overhead", e.overhead);
  optional_field(ar, "row_overhead", e.row_overhead);
  optional_field(ar, "cold_overhead", e.cold_overhead);
}

namespace {

// The efficiency table as an object keyed by class name; a class left out stays at the peaks.
struct EfficiencyByClass {
  std::array<KernelEfficiency, kOpClasses>& table;
  template <class Archive>
  void serialize(Archive& ar) {
    for (int c = 0; c < kOpClasses; ++c)
      optional_field(ar, op_class_name(OpClass(c)).data(), table[size_t(c)]);
  }
};

}  // namespace

template <class Archive>
void serialize(Archive& ar, SimSpec& s) {
  ar(cereal::make_nvp("name", s.name), cereal::make_nvp("memory_bytes", s.memory_bytes),
     cereal::make_nvp("peak_flops_f64", s.peak_flops_f64),
     cereal::make_nvp("peak_flops_f32", s.peak_flops_f32),
     cereal::make_nvp("peak_flops_bf16", s.peak_flops_bf16),
     cereal::make_nvp("memory_bandwidth", s.memory_bandwidth),
     cereal::make_nvp("launch_overhead", s.launch_overhead),
     cereal::make_nvp("host_link", s.host_link), cereal::make_nvp("interconnect", s.interconnect),
     cereal::make_nvp("topology", s.topology), cereal::make_nvp("node_size", s.node_size),
     cereal::make_nvp("network", s.network));
  optional_field(ar, "torus", s.torus);
  optional_field(ar, "devices_per_chip", s.devices_per_chip);
  optional_field(ar, "host", s.host);
  optional_field(ar, "cold_bytes", s.cold_bytes);
  optional_field(ar, "interconnect_name", s.interconnect_name);
  optional_field(ar, "network_name", s.network_name);
  EfficiencyByClass efficiency{s.efficiency};
  optional_field(ar, "efficiency", efficiency);
}

double SimSpec::peak_flops(MathPrecision p) const {
  switch (p) {
    case MathPrecision::f64:
      return peak_flops_f64;
    case MathPrecision::f32:
      return peak_flops_f32;
    case MathPrecision::bf16:
      return peak_flops_bf16;
  }
  return peak_flops_f32;
}

void SimSpec::validate() const {
  auto positive = [&](double v, const char* what) {
    DLF_CHECK(v > 0, "device spec '", name, "': ", what, " must be positive (got ", v, ")");
  };
  DLF_CHECK(memory_bytes >= 0, "device spec '", name,
            "': memory_bytes must be >= 0 (0: unlimited)");
  positive(peak_flops_f64, "peak_flops_f64");
  positive(peak_flops_f32, "peak_flops_f32");
  positive(peak_flops_bf16, "peak_flops_bf16");
  positive(memory_bandwidth, "memory_bandwidth");
  positive(host_link.bandwidth, "host_link.bandwidth");
  if (topology != Topology::torus || devices_per_chip > 1)
    positive(interconnect.bandwidth, "interconnect.bandwidth");
  DLF_CHECK(launch_overhead >= 0 && host_link.latency >= 0 && interconnect.latency >= 0 &&
                network.latency >= 0,
            "device spec '", name, "': latencies and launch_overhead must be >= 0");
  DLF_CHECK(cold_bytes >= 0, "device spec '", name,
            "': cold_bytes must be >= 0 (0: kernels never start cold)");
  DLF_CHECK(host.flops >= 0 && host.memory_bandwidth >= 0, "device spec '", name,
            "': host.flops and host.memory_bandwidth must be >= 0 (0: the host's work untimed)");
  if (topology == Topology::nodes || topology == Topology::torus) {
    DLF_CHECK(node_size > 0, "device spec '", name, "': node_size must be positive");
    positive(network.bandwidth, "network.bandwidth");
  }
  if (topology == Topology::torus) {
    DLF_CHECK(!torus.empty() && devices_per_chip > 0, "device spec '", name,
              "': a torus needs at least one dimension and devices_per_chip > 0");
    int64_t devices = devices_per_chip;
    for (const TorusDimension& d : torus) {
      DLF_CHECK(d.size > 0 && d.link.bandwidth > 0 && d.link.latency >= 0, "device spec '", name,
                "': each torus dimension needs a positive size and link bandwidth");
      devices *= d.size;
    }
    DLF_CHECK(devices == node_size, "device spec '", name, "': node_size ", node_size,
              " must be devices_per_chip x the torus's chips = ", devices);
  }
  for (int c = 0; c < kOpClasses; ++c) {
    const KernelEfficiency& e = efficiency[size_t(c)];
    DLF_CHECK(
        e.compute > 0 && e.memory > 0 && e.overhead >= 0 && e.row_overhead >= 0 &&
            e.cold_overhead >= 0,
        "device spec '", name, "': efficiency of ", op_class_name(OpClass(c)),
        ": compute and memory must be positive, overhead, row_overhead and cold_overhead >= 0");
  }
}

std::string_view op_class_name(OpClass c) {
  static constexpr std::string_view names[] = {
      "matmul",    "attention",         "conv", "normalisation", "element-wise",
      "optimizer", "attention-backward"};
  return names[static_cast<int>(c)];
}

OpClass op_class(std::string_view name) {
  auto has = [&](std::string_view part) { return name.find(part) != std::string_view::npos; };
  if (has("attention"))
    return name.ends_with("_backward") ? OpClass::attention_backward : OpClass::attention;
  if (name.starts_with("conv")) return OpClass::conv;
  if (has("matmul") || has("linear")) return OpClass::matmul;
  if (has("norm")) return OpClass::normalisation;
  if (name.starts_with("adam") || name.starts_with("sgd")) return OpClass::optimizer;
  return OpClass::elementwise;
}

SimSpec sim_spec_from_json(const std::string& json) {
  SimSpec spec;
  // A spec written before attention's backward had a class of its own prices it as attention.
  KernelEfficiency& backward = spec.efficiency[size_t(OpClass::attention_backward)];
  backward.compute = -1;
  try {
    std::istringstream is(json);
    cereal::JSONInputArchive archive(is);
    archive(cereal::make_nvp("device", spec));
    if (backward.compute == -1) {  // absent: attention's; an entry without compute: the peak
      const bool absent = backward.memory == 1 && backward.overhead == 0 &&
                          backward.row_overhead == 0 && backward.cold_overhead == 0;
      backward = absent ? spec.efficiency[size_t(OpClass::attention)]
                        : KernelEfficiency{.memory = backward.memory,
                                           .overhead = backward.overhead,
                                           .row_overhead = backward.row_overhead,
                                           .cold_overhead = backward.cold_overhead};
    }
  } catch (const Error&) {
    throw;
  } catch (const std::exception& e) {
    throw Error(std::string("device spec is not valid JSON of the expected form: ") + e.what());
  }
  spec.validate();
  return spec;
}

SimSpec sim_spec_from(std::string_view preset_or_path) {
  if (!preset_or_path.ends_with(".json")) return sim_preset(preset_or_path);
  std::ifstream in{std::string(preset_or_path)};
  DLF_CHECK(in, "cannot read device spec file '", preset_or_path, "'");
  std::stringstream text;
  text << in.rdbuf();
  try {
    return sim_spec_from_json(text.str());
  } catch (const Error& e) {
    throw Error(detail::concat(preset_or_path, ": ", e.what()));
  }
}

std::string to_json(const SimSpec& spec) {
  std::ostringstream os;
  {
    cereal::JSONOutputArchive archive(os);
    archive(cereal::make_nvp("device", spec));
  }
  return os.str();
}

}  // namespace dlf
