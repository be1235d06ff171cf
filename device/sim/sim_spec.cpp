#include <dlf/device/sim_spec.h>
#include <dlf/error.h>

#include <cereal/archives/json.hpp>
#include <cereal/types/string.hpp>
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
std::string save_minimal(const Archive&, const Topology& t) {
  static constexpr const char* names[] = {"ring", "fully_connected", "nodes"};
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
  else
    throw Error("unknown topology '" + name + "': expected ring, fully_connected or nodes");
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
  optional_field(ar, "host", s.host);
  optional_field(ar, "cold_bytes", s.cold_bytes);
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
  positive(interconnect.bandwidth, "interconnect.bandwidth");
  DLF_CHECK(launch_overhead >= 0 && host_link.latency >= 0 && interconnect.latency >= 0 &&
                network.latency >= 0,
            "device spec '", name, "': latencies and launch_overhead must be >= 0");
  DLF_CHECK(cold_bytes >= 0, "device spec '", name,
            "': cold_bytes must be >= 0 (0: kernels never start cold)");
  DLF_CHECK(host.flops >= 0 && host.memory_bandwidth >= 0, "device spec '", name,
            "': host.flops and host.memory_bandwidth must be >= 0 (0: the host's work untimed)");
  if (topology == Topology::nodes) {
    DLF_CHECK(node_size > 0, "device spec '", name, "': node_size must be positive");
    positive(network.bandwidth, "network.bandwidth");
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

namespace {

constexpr double GB = 1e9, TF = 1e12, us = 1e-6;
constexpr int64_t GiB = int64_t(1) << 30;

// Figures from the vendors' datasheets: dense (no sparsity) peaks; f32 is the plain FP32 rate
// (not TF32: PyTorch leaves TF32 matmul off by default); f64 the FP64 tensor-core rate; link
// bandwidths per direction. Latencies and launch overhead are typical measured orders of
// magnitude (a CUDA kernel launch ~5 µs, an NCCL hop a few µs), not datasheet figures.
// Nodes are DGX-style: 8 GPUs on NVSwitch (A100, H100) or PCIe (L4), one network port per GPU.
// How near an A100's kernels come to its peaks, from published measurements (bf16/fp16):
// large GEMMs 271 of 312 TFLOP/s (stas00/ml-engineering, compute/accelerator/README.md, the
// "maximum achievable matmul FLOPS" table, A100 SXM); streaming element-wise kernels 85 % of
// the bandwidth (BabelStream Triad, A100 80GB SXM, ukri-bench/benchmark-BabelStream);
// LayerNorm as frameworks ship it about 60 % (karpathy/llm.c PR 645; NVIDIA/apex PR 1037's
// older kernel); attention as an unfused kernel (PyTorch's standard attention, which Megatron-LM
// and others ran before FlashAttention): 32 TFLOP/s causal at head dim 128, sequence 2k, FLOPs
// counted for the visible pairs as our cost does (FlashAttention-2, Dao 2023, Fig. 4), and its
// score matrix through memory at ~62 % (FlashAttention, Dao et al. 2022, Fig. 2). Convolutions
// as GEMMs (cuDNN's implicit GEMM; no separate figure). The other presets use the same shares:
// no like-for-like figures for them were checked.
constexpr std::array<KernelEfficiency, kOpClasses> kGpuEfficiency = {{
    {.compute = 0.87, .memory = 0.85},  // matmul
    {.compute = 0.10, .memory = 0.62},  // attention
    {.compute = 0.87, .memory = 0.85},  // conv
    {.compute = 0.87, .memory = 0.60},  // normalisation
    {.compute = 0.87, .memory = 0.85},  // element-wise
    {.compute = 0.87, .memory = 0.85},  // optimizer
    {.compute = 0.10, .memory = 0.62},  // attention's backward: as its forward (no figure apart)
}};

const std::vector<SimSpec>& presets() {
  static const std::vector<SimSpec> all = [] {
    const SimSpec a100_40 = {
        .name = "a100-40gb",  // NVIDIA A100 SXM4 40GB
        .memory_bytes = 40 * GiB,
        .peak_flops_f64 = 19.5 * TF,
        .peak_flops_f32 = 19.5 * TF,
        .peak_flops_bf16 = 312 * TF,
        .memory_bandwidth = 1555 * GB,
        .launch_overhead = 5 * us,
        .host_link = {32 * GB, 10 * us},     // PCIe 4.0 x16
        .interconnect = {300 * GB, 5 * us},  // NVLink 3: 600 GB/s both directions
        .topology = Topology::nodes,
        .node_size = 8,
        .network = {25 * GB, 10 * us},  // 200 Gb/s HDR InfiniBand
        // DGX A100's 2 AMD EPYC 7742 (64 cores, 2.25 GHz, 32 f32 FLOP a cycle; 8 channels of
        // DDR4-3200 each) shared by its 8 GPUs
        .host = {.flops = 2 * 64 * 2.25e9 * 32 / 8, .memory_bandwidth = 2 * 204.8 * GB / 8},
        .efficiency = kGpuEfficiency};
    // The A100 SXM4 80GB: HBM2e, otherwise the 40GB's figures.
    SimSpec a100_80 = a100_40;
    a100_80.name = "a100-80gb";
    a100_80.memory_bytes = 80 * GiB;
    a100_80.memory_bandwidth = 2039 * GB;
    const SimSpec h100 = {
        .name = "h100-80gb",  // NVIDIA H100 SXM5
        .memory_bytes = 80 * GiB,
        .peak_flops_f64 = 67 * TF,
        .peak_flops_f32 = 67 * TF,
        .peak_flops_bf16 = 989 * TF,
        .memory_bandwidth = 3350 * GB,
        .launch_overhead = 5 * us,
        .host_link = {64 * GB, 10 * us},     // PCIe 5.0 x16
        .interconnect = {450 * GB, 5 * us},  // NVLink 4: 900 GB/s both directions
        .topology = Topology::nodes,
        .node_size = 8,
        .network = {50 * GB, 10 * us},  // 400 Gb/s NDR InfiniBand
        // DGX H100's 2 Xeon Platinum 8480C (56 cores, 2.0 GHz, 64 f32 FLOP a
        // cycle; 8 channels of DDR5-4800 each) shared by its 8 GPUs
        .host = {.flops = 2 * 56 * 2.0e9 * 64 / 8, .memory_bandwidth = 2 * 307.2 * GB / 8},
        .efficiency = kGpuEfficiency};
    const SimSpec l4 = {
        .name = "l4-24gb",  // NVIDIA L4: a PCIe card, no NVLink
        .memory_bytes = 24 * GiB,
        .peak_flops_f64 = 0.47 * TF,
        .peak_flops_f32 = 30.3 * TF,
        .peak_flops_bf16 = 121 * TF,
        .memory_bandwidth = 300 * GB,
        .launch_overhead = 5 * us,
        .host_link = {32 * GB, 10 * us},     // PCIe 4.0 x16
        .interconnect = {32 * GB, 10 * us},  // peer to peer through the host's PCIe switch
        .topology = Topology::nodes,
        .node_size = 8,
        .network = {12.5 * GB, 20 * us},  // 100 Gb/s Ethernet
        // a 2-socket AMD EPYC 9354 server (32 cores, 3.25 GHz, 32 f32 FLOP a cycle; 12 channels
        // of DDR5-4800 each) shared by its 8 cards
        .host = {.flops = 2 * 32 * 3.25e9 * 32 / 8, .memory_bandwidth = 2 * 460.8 * GB / 8},
        .efficiency = kGpuEfficiency};
    return std::vector<SimSpec>{a100_40, a100_80, h100, l4};
  }();
  return all;
}

}  // namespace

std::vector<std::string> sim_preset_names() {
  std::vector<std::string> names;
  for (const SimSpec& p : presets()) names.push_back(p.name);
  return names;
}

SimSpec sim_preset(std::string_view name) {
  for (const SimSpec& p : presets()) {
    if (p.name == name) return p;
  }
  std::string known;
  for (const auto& n : sim_preset_names()) known += (known.empty() ? "" : ", ") + n;
  throw Error(detail::concat("unknown device preset '", name, "': known presets are ", known,
                             ", or give a JSON spec file (*.json)"));
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
