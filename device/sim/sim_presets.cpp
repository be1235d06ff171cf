// The named presets of sim_preset(): real accelerators, each figure with its source.
#include <dlf/device/sim_spec.h>
#include <dlf/error.h>

namespace dlf {

namespace {

constexpr double GB = 1e9, TF = 1e12, us = 1e-6, Gbps = 1e9 / 8;
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
        .interconnect_name = "NVLink 3",
        .network_name = "InfiniBand HDR",
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
        .interconnect_name = "NVLink 4",
        .network_name = "InfiniBand NDR",
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
        .interconnect_name = "PCIe",
        .network_name = "Ethernet",
        // a 2-socket AMD EPYC 9354 server (32 cores, 3.25 GHz, 32 f32 FLOP a cycle; 12 channels
        // of DDR5-4800 each) shared by its 8 cards
        .host = {.flops = 2 * 32 * 3.25e9 * 32 / 8, .memory_bandwidth = 2 * 460.8 * GB / 8},
        .efficiency = kGpuEfficiency};
    // The H200 SXM: the H100's GH100 silicon with HBM3e (141 GB at 4.8 TB/s: lzwjava.github.io
    // and aiwiki.ai's H200 pages, secondary); the H100's peaks and links (its dense BF16 989
    // TFLOPS, half the 1,979 quoted with sparsity; FP32 and FP64 67: unconfirmed for the H200;
    // NVLink 4, 900 GB/s both directions: lzwjava, saulelectric.com). The network port and
    // the DGX H200's CPUs are taken as the DGX H100's: unconfirmed.
    SimSpec h200 = h100;
    h200.name = "h200";
    h200.memory_bytes = int64_t(141 * GB);
    h200.memory_bandwidth = 4800 * GB;
    const SimSpec b200 = {
        .name = "b200",                     // NVIDIA B200 in an HGX/DGX B200 (1,000 W)
        .memory_bytes = int64_t(180 * GB),  // DGX B200: "8 x NVIDIA B200 GPUs that provide
                                            // 1,440 GB total GPU memory" (its user guide)
        .peak_flops_f64 = 80 * TF,          // FP64 not gathered: priced as FP32
        // glennklockwood.com's B200 table (HGX, 1,000 W); fibermall's 600 TFLOPS an 8-GPU
        // board gives 75: conflicting, unconfirmed
        .peak_flops_f32 = 80 * TF,
        .peak_flops_bf16 = 2250 * TF,   // dense (4,500 with sparsity): glennklockwood, fibermall
        .memory_bandwidth = 8000 * GB,  // HBM3e 8 TB/s: glennklockwood, docs.vultr.com
        .launch_overhead = 5 * us,
        .host_link = {64 * GB, 10 * us},  // PCIe 5.0 x16 (DGX B200: "PCIe Gen5 CPUs")
        // NVLink 5: 1.8 TB/s a GPU both directions (esaitech.com, fibermall); the DGX B200 guide:
        // NVSwitches of 14.4 TB/s aggregate
        .interconnect = {900 * GB, 5 * us},
        .topology = Topology::nodes,
        .node_size = 8,
        // DGX B200: a 400 Gb/s ConnectX-7 card per GPU (its user guide; fibermall's "0.8 TB/s"
        // an HGX board would be 800 Gb/s a GPU)
        .network = {400 * Gbps, 10 * us},
        .interconnect_name = "NVLink 5",
        .network_name = "InfiniBand NDR",
        // DGX B200's 2 Xeon 8570 (56 cores, 2.1 GHz: its user guide; 64 f32 FLOP a cycle as the
        // 8480C's; 8 channels of DDR5-5600 each, the CPU's rating: the guide gives no DIMM
        // speed, unconfirmed) shared by its 8 GPUs
        .host = {.flops = 2 * 56 * 2.1e9 * 64 / 8, .memory_bandwidth = 2 * 358.4 * GB / 8},
        .efficiency = kGpuEfficiency};

    // AWS Trainium. A trn1 device is one NeuronCore-v2, half a Trainium chip; figures from the
    // AWS Neuron documentation's architecture pages, named as in bench/data/device_specs.md
    // (which quotes each sentence): [N-trainium] Trainium, [N-trn1] Trn1/Trn1n, [N-trainium2]
    // Trainium2, [N-trn2] Trn2, [N-lnc] Logical NeuronCore configuration. No page gives the
    // host CPUs' rates (only vCPUs and memory), so offloaded work is untimed; no page gives
    // Trainium's FP64 (not among its types), so f64 is priced as FP32. Latencies and launch
    // overhead are orders of magnitude as for the GPUs, not measured. No Trainium kernel
    // efficiencies were checked: the GPUs' shares stand in.
    const SimSpec trn1 = {
        .name = "trn1",
        .memory_bytes = 16 * GiB,         // derived: 32 GiB a chip [N-trainium] / 2 cores
        .peak_flops_f64 = 23.75 * TF,     // as FP32
        .peak_flops_f32 = 23.75 * TF,     // derived: 47.5 FP32 TFLOPS a chip [N-trainium] / 2
        .peak_flops_bf16 = 95 * TF,       // derived: 190 BF16 TFLOPS a chip [N-trainium] / 2
        .memory_bandwidth = 410.0 * GiB,  // derived: 820 GiB/s a chip [N-trainium] / 2
        .launch_overhead = 5 * us,
        .host_link = {32 * GB, 10 * us},  // PCIe 4.0 x16: unconfirmed (no page gives it)
        // the chip's two cores: its 1 TB/s of DMA [N-trainium], unconfirmed as a core-to-core
        // figure
        .interconnect = {1000 * GB, 2 * us},
        .topology = Topology::torus,
        .node_size = 32,
        .network = {800 * Gbps, 15 * us},  // EFA 800 Gbps a trn1.32xlarge [N-trn1], shared
                                           // by its 32 cores
        .interconnect_name = "NeuronLink-v2",
        .network_name = "EFA",
        // 16 chips "in a 2D Torus topology" [N-trn1] (4 x 4 in its figure only: unconfirmed as
        // text); NeuronLink-v2 384 GB/s a chip [N-trn1] (GB or GiB: unconfirmed), split evenly
        // between the two dimensions (derived)
        .torus = {{4, {192 * GB, 2 * us}}, {4, {192 * GB, 2 * us}}},
        .devices_per_chip = 2,
        .efficiency = kGpuEfficiency};
    // trn1n.32xlarge: the trn1's chips with twice the NeuronLink-v2 (768 GB/s a chip) and EFA
    // (1,600 Gbps) [N-trn1].
    SimSpec trn1n = trn1;
    trn1n.name = "trn1n";
    trn1n.network.bandwidth = 1600 * Gbps;
    for (TorusDimension& d : trn1n.torus) d.link.bandwidth = 384 * GB;
    // A trn2 device is one Trainium2 chip (8 NeuronCore-v3); trn2-lnc2 below is one logical
    // core under LNC=2, the Neuron runtime's default.
    const SimSpec trn2 = {
        .name = "trn2",
        .memory_bytes = 96 * GiB,       // [N-trainium2]: "96 GiB of device memory"
        .peak_flops_f64 = 181 * TF,     // as FP32
        .peak_flops_f32 = 181 * TF,     // [N-trainium2]: "181 FP32 TFLOPS"
        .peak_flops_bf16 = 667 * TF,    // [N-trainium2]: "667 BF16/FP16/TF32 TFLOPS" (dense)
        .memory_bandwidth = 2900 * GB,  // [N-trainium2]: "2.9 TB/sec of bandwidth"
        .launch_overhead = 5 * us,
        .host_link = {64 * GB, 10 * us},  // PCIe 5.0 x16: unconfirmed (no page gives it)
        .interconnect = {},               // one device a chip
        .topology = Topology::torus,
        .node_size = 16,
        .network = {3200 * Gbps, 15 * us},  // EFAv3 3,200 Gbps a trn2.48xlarge [N-trn2],
                                            // shared by its 16 chips
        .interconnect_name = "NeuronLink-v3",
        .network_name = "EFAv3",
        // "a 4x4, 2D Torus topology" [N-trn2]; intra-instance NeuronLink-v3 1,024 GB/s a chip
        // [N-trn2], split evenly between the two dimensions (derived)
        .torus = {{4, {512 * GB, 2 * us}}, {4, {512 * GB, 2 * us}}},
        .devices_per_chip = 1,
        .efficiency = kGpuEfficiency};
    // One logical NeuronCore under LNC=2: two physical NeuronCore-v3, a quarter of the chip
    // ([N-lnc]: 4 logical cores a chip, 64 a trn2.48xlarge). Its peaks are the chip's / 4
    // (derived; [N-nc3]'s 79 BF16 TFLOPS a physical core gives 158, not 667 / 4 = 166.75:
    // which holds per core is unconfirmed); its memory one of the chip's "four 24GB HBM banks"
    // [N-lnc] and a quarter of its bandwidth (unconfirmed: an even split across banks).
    SimSpec trn2_lnc2 = trn2;
    trn2_lnc2.name = "trn2-lnc2";
    trn2_lnc2.memory_bytes = 24 * GiB;
    trn2_lnc2.peak_flops_f64 = trn2_lnc2.peak_flops_f32 = 181 * TF / 4;
    trn2_lnc2.peak_flops_bf16 = 667 * TF / 4;
    trn2_lnc2.memory_bandwidth = 2900 * GB / 4;
    trn2_lnc2.devices_per_chip = 4;
    trn2_lnc2.node_size = 64;
    // the chip's 3.5 TB/s of DMA [N-trainium2], unconfirmed as a core-to-core figure
    trn2_lnc2.interconnect = {3500 * GB, 2 * us};
    // A Trn2 UltraServer as one node: four trn2u.48xlarge whose "Trainium2 chips with the
    // same coordinates in each Trn2 instance are connected in a ring topology" [N-trn2] over
    // 256 GB/s a chip of inter-instance NeuronLink-v3: a third torus dimension of 4. Its EFA
    // is the four instances' 3,200 Gbps each ([N-trn2] lists 3,200 in the UltraServer column:
    // whether per instance or per UltraServer is unconfirmed).
    SimSpec trn2_ultra = trn2;
    trn2_ultra.name = "trn2-ultra";
    trn2_ultra.torus.push_back({4, {256 * GB, 2 * us}});
    trn2_ultra.node_size = 64;
    trn2_ultra.network.bandwidth = 4 * 3200 * Gbps;
    return std::vector<SimSpec>{a100_40, a100_80, h100, l4,        h200,      b200,
                                trn1,    trn1n,   trn2, trn2_lnc2, trn2_ultra};
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

}  // namespace dlf
