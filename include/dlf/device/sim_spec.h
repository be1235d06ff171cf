// What a simulated accelerator is: memory, compute, bandwidths and the interconnect between
// devices. Presets for real accelerator classes, or a JSON file (cereal).
#pragma once
#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace dlf {

/// A link in one direction: alpha (latency) and beta (bandwidth) of the alpha–beta model.
struct LinkSpec {
  double bandwidth = 0;  ///< bytes/s
  double latency = 0;    ///< seconds per message
};

/// How a group of simulated devices is linked.
enum class Topology : uint8_t {
  ring,             ///< devices in a line of `interconnect` links: a message from device a
                    ///< to device b crosses |a - b| of them (a latency each)
  fully_connected,  ///< every pair over `interconnect` (a switch, e.g. NVSwitch)
  nodes,            ///< nodes of `node_size` fully connected devices, joined by `network`
  torus,            ///< nodes whose chips form a torus (SimSpec::torus; one dimension: a
                    ///< ring), `devices_per_chip` devices to a chip, joined by `network`
};

/// One dimension of a torus of chips: a ring of `size` chips, neighbours joined by `link`.
struct TorusDimension {
  int size = 1;   ///< chips on each ring of this dimension
  LinkSpec link;  ///< a chip to its neighbour on the ring, in one direction
};

/// The host CPU's share per device, for the work offloaded to it (ZeRO-Offload's optimizer
/// update): its f32 peak and memory bandwidth. Zeros: that work is not timed.
struct HostSpec {
  double flops = 0;             ///< f32 FLOP/s
  double memory_bandwidth = 0;  ///< bytes/s
};

/// The arithmetic a kernel runs in; each has its own peak rate.
enum class MathPrecision : uint8_t { f64, f32, bf16 };

/// The kinds of kernel whose efficiency a sim device models apart. Attention's backward is a
/// class of its own: per FLOP of the standard count, its forward (softmax's exponentials
/// between two products) runs at half the rate of its backward on a CPU.
enum class OpClass : uint8_t {
  matmul,
  attention,
  conv,
  normalisation,
  elementwise,
  optimizer,
  attention_backward,
};
inline constexpr int kOpClasses = 7;  ///< how many OpClass values there are
/// "matmul", "attention", "conv", "normalisation", "element-wise", "optimizer",
/// "attention-backward"
std::string_view op_class_name(OpClass c);
/// The class of the op named `name`, by its name: *attention*_backward, attention, conv*, matmul
/// and linear, *norm*, adam* and sgd* (the optimizer's updates), and element-wise for the rest
/// (copies, softmax, reductions, fused element-wise kernels).
OpClass op_class(std::string_view name);

/// How near one class of kernels comes to the device's peaks: a kernel of W FLOPs over R rows
/// (Cost::rows) moving B bytes takes overhead + max(W / (compute · peak) + R · row_overhead,
/// B / (memory · bandwidth)), plus the device's launch overhead — so the share of the peak it
/// achieves grows with its size towards `compute` (or `memory`), the curve a class's kernels
/// follow, and with the length of its rows (attention over short sequences reaches less) — plus
/// the share of cold_overhead it starts cold (ColdStarts).
struct KernelEfficiency {
  double compute = 1;        ///< the share of the peak FLOP/s a large kernel reaches
  double memory = 1;         ///< the share of the memory bandwidth a large kernel reaches
  double overhead = 0;       ///< seconds each kernel takes beyond that (and launch_overhead)
  double row_overhead = 0;   ///< seconds each row of a row-wise kernel adds to its FLOPs' time
  double cold_overhead = 0;  ///< seconds a kernel adds when it starts fully cold (cold_bytes)
};

/// An accelerator as the simulator sees it: memory, peaks, links and overheads.
struct SimSpec {
  std::string name = "custom";  ///< a preset's name or the file's
  int64_t memory_bytes = 0;     ///< capacity; 0 means unlimited
  /// peak FLOP/s per math precision
  ///@{
  double peak_flops_f64 = 0, peak_flops_f32 = 0, peak_flops_bf16 = 0;
  ///@}
  double memory_bandwidth = 0;  ///< bytes/s
  double launch_overhead = 0;   ///< seconds added to every op
  /// Bytes the device's kernels move after which a kernel starts fully cold (a CPU's caches and
  /// page tables: KernelEfficiency::cold_overhead, ColdStarts); 0: kernels never start cold.
  double cold_bytes = 0;
  LinkSpec host_link;  ///< to host memory (offload)
  /// Between devices (within a node for Topology::nodes; between the devices of one chip for
  /// Topology::torus, where one device a chip leaves it unused)
  LinkSpec interconnect;
  Topology topology = Topology::fully_connected;  ///< how devices are linked
  /// Devices per node (Topology::nodes; for Topology::torus, devices_per_chip times the
  /// torus's chips)
  int node_size = 8;
  /// Between nodes: each device's own port (Topology::nodes), or the node's, shared by all
  /// its devices (Topology::torus: 32 NeuronCores of a trn1 share one EFA)
  LinkSpec network;
  /// What the links are called, for people ("NVLink 4", "NeuronLink-v2"; "InfiniBand NDR",
  /// "EFA"): within a node (`interconnect`, or the torus's links) and between nodes
  ///@{
  std::string interconnect_name = "interconnect", network_name = "network";
  ///@}
  /// Topology::torus: a node's chips, dimension 0 innermost (chip c of a node sits at
  /// c mod size0, c / size0 mod size1, ...); a node's device i is on its chip i / devices_per_chip
  std::vector<TorusDimension> torus = {};
  int devices_per_chip = 1;  ///< Topology::torus: devices sharing a chip and its links
  HostSpec host = {};        ///< the host's arithmetic (a spec file may leave it out: untimed)
  /// Per OpClass, how near its kernels come to the peaks (a spec file may leave it out: every
  /// kernel at the peaks; one without attention-backward gives it attention's).
  std::array<KernelEfficiency, kOpClasses> efficiency = {};

  double peak_flops(MathPrecision p) const;  ///< the peak FLOP/s of `p`
  /// Throws dlf::Error naming the first figure that is missing or not positive.
  void validate() const;
};

/// A named preset ("a100-40gb", "h100-80gb", ...); dlf::Error lists the names when unknown.
SimSpec sim_preset(std::string_view name);
std::vector<std::string> sim_preset_names();  ///< the names sim_preset() knows
/// A preset name, or a path to a JSON spec file (anything ending in ".json").
SimSpec sim_spec_from(std::string_view preset_or_path);
/// A spec from its JSON text (a dlf::Error names a bad field)
SimSpec sim_spec_from_json(const std::string& json);
std::string to_json(const SimSpec& spec);  ///< its JSON text

}  // namespace dlf
