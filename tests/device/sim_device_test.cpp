#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include <dlf/core/op_class_times.h>

#include "test_util.h"

namespace dlf {
namespace {

constexpr int64_t KiB = 1024;

SimSpec small_spec(int64_t memory) {
  SimSpec s = sim_preset("a100-40gb");
  s.name = "test-device";
  s.memory_bytes = memory;
  return s;
}

}  // namespace

TEST_CASE("sim spec: presets are valid, JSON round-trips, bad specs are refused") {
  for (const std::string& name : sim_preset_names()) {
    SimSpec s = sim_preset(name);
    CHECK(s.name == name);
    CHECK_NOTHROW(s.validate());
    SimSpec back = sim_spec_from_json(to_json(s));
    CHECK(back.name == s.name);
    CHECK(back.memory_bytes == s.memory_bytes);
    CHECK(back.peak_flops_bf16 == s.peak_flops_bf16);
    CHECK(back.network.bandwidth == s.network.bandwidth);
    CHECK(back.topology == s.topology);
    CHECK(back.host.memory_bandwidth == s.host.memory_bandwidth);
    CHECK(back.devices_per_chip == s.devices_per_chip);
    REQUIRE(back.torus.size() == s.torus.size());
    for (size_t i = 0; i < s.torus.size(); ++i) {
      CHECK(back.torus[i].size == s.torus[i].size);
      CHECK(back.torus[i].link.bandwidth == s.torus[i].link.bandwidth);
    }
    // No source gives the rates of a Trainium host's CPUs: its offloaded work is untimed.
    CHECK((s.host.flops > 0) == !s.name.starts_with("trn"));
  }
  // A spec file without the host's figures or the kernels' efficiencies (from before them)
  // loads: the host's work untimed, every kernel at the peaks.
  auto without = [](std::string json, const std::string& field) {
    const size_t at = json.find(",\n        \"" + field + "\"");
    REQUIRE(at != std::string::npos);
    size_t end = json.find('{', at);
    for (int depth = 0;; ++end) {  // to the field's closing brace
      if (json[end] == '{') ++depth;
      if (json[end] == '}' && --depth == 0) break;
    }
    json.erase(at, end + 1 - at);
    return json;
  };
  const std::string old = without(without(to_json(sim_preset("a100-40gb")), "efficiency"), "host");
  REQUIRE(old.find("\"host\"") == std::string::npos);
  const SimSpec without_host = sim_spec_from_json(old);
  CHECK(without_host.host.flops == 0);
  CHECK(without_host.peak_flops_bf16 == sim_preset("a100-40gb").peak_flops_bf16);
  CHECK(without_host.efficiency[size_t(OpClass::attention)].compute == 1);
  // The efficiencies round-trip; a class left out of the table stays at the peaks.
  const SimSpec a100 = sim_preset("a100-80gb");
  CHECK(a100.efficiency[size_t(OpClass::attention)].compute == 0.10);
  std::string json = to_json(a100);
  CHECK(sim_spec_from_json(json).efficiency[size_t(OpClass::normalisation)].memory == 0.60);
  const size_t matmul = json.find("\"matmul\"");
  REQUIRE(matmul != std::string::npos);
  json.replace(matmul, 8, "\"matmux\"");
  CHECK(sim_spec_from_json(json).efficiency[size_t(OpClass::matmul)].compute == 1);
  CHECK(sim_spec_from_json(json).efficiency[size_t(OpClass::conv)].compute == 0.87);
  // An entry may leave figures out (the peaks' for those); the classes after it still load.
  std::string partial = to_json(a100);
  const size_t attention = partial.find("\"attention\"");
  partial.replace(attention, partial.find('}', attention) + 1 - attention,
                  "\"attention\": {\"compute\": 0.5}");
  const SimSpec read = sim_spec_from_json(partial);
  CHECK(read.efficiency[size_t(OpClass::attention)].compute == 0.5);
  CHECK(read.efficiency[size_t(OpClass::attention)].memory == 1);
  CHECK(read.efficiency[size_t(OpClass::optimizer)].memory == 0.85);
  // A spec from before attention's backward had a class of its own prices it as attention.
  std::string before = partial;
  const size_t backward = before.find("\"attention-backward\"");
  REQUIRE(backward != std::string::npos);
  before.replace(backward, before.find('}', backward) + 1 - backward, "\"unused\": {}");
  const SimSpec older = sim_spec_from_json(before);
  CHECK(older.efficiency[size_t(OpClass::attention_backward)].compute == 0.5);
  CHECK(older.efficiency[size_t(OpClass::attention_backward)].memory == 1);
  CHECK(read.efficiency[size_t(OpClass::attention_backward)].compute == 0.10);
  // A row overhead round-trips, and survives as the backward's own when the entry has one.
  SimSpec rowed = a100;
  rowed.efficiency[size_t(OpClass::attention_backward)].row_overhead = 7e-8;
  CHECK(sim_spec_from_json(to_json(rowed))
            .efficiency[size_t(OpClass::attention_backward)]
            .row_overhead == 7e-8);
  CHECK(sim_spec_from_json(to_json(rowed)).efficiency[size_t(OpClass::attention)].row_overhead ==
        0);
  // A host with a figure missing, or a figure of the wrong type, is an error, not the peaks.
  std::string half_host = to_json(a100);
  const size_t host = half_host.find("\"host\"");
  half_host.replace(host, half_host.find('}', host) + 1 - host, "\"host\": {\"flops\": 1e12}");
  test::check_error([&] { sim_spec_from_json(half_host); }, {"memory_bandwidth"});
  std::string typo = to_json(a100);
  typo.replace(typo.find("0.1", typo.find("\"attention\"")), 3, "\"0.1\"");
  test::check_error([&] { sim_spec_from_json(typo); }, {"device spec"});
  SimSpec bad = a100;
  bad.efficiency[size_t(OpClass::conv)].compute = 0;
  test::check_error([&] { bad.validate(); }, {"efficiency of conv"});
  bad = a100;
  bad.efficiency[size_t(OpClass::attention)].row_overhead = -1e-9;
  test::check_error([&] { bad.validate(); }, {"efficiency of attention", "row_overhead"});
  test::check_error([] { sim_preset("tpu-v9"); }, {"unknown device preset 'tpu-v9'", "a100-40gb"});
  test::check_error([] { sim_spec_from_json("{\"device\": 3}"); }, {"device spec"});
  json = to_json(sim_preset("l4-24gb"));
  json.insert(json.find("\"memory_bandwidth\": ") + 20, "-");
  test::check_error([&] { sim_spec_from_json(json); }, {"memory_bandwidth must be positive"});
  test::check_error([] { sim_spec_from("/nonexistent/spec.json"); }, {"cannot read device spec"});

  const auto path = std::filesystem::temp_directory_path() / "dlf_spec_test.json";
  std::ofstream(path) << to_json(small_spec(123 * KiB));
  CHECK(sim_spec_from(path.string()).memory_bytes == 123 * KiB);
  std::filesystem::remove(path);
}

TEST_CASE("sim device: allocation past capacity is OutOfMemory listing what is live") {
  const Device dev{DeviceType::sim, 7};
  sim::configure(dev, small_spec(1024 * KiB));
  Tensor weights, grads;
  {
    MemoryScope scope(MemoryCategory::parameters);
    weights = zeros({400 * KiB / 4}, {.device = dev});
  }
  grads = zeros({200 * KiB / 4}, {.device = dev});
  grads.storage()->set_category(MemoryCategory::gradients);
  MemoryStats stats = allocator_for(dev).stats();
  CHECK(stats.live_bytes == 600 * KiB);
  CHECK(stats.live_by[static_cast<int>(MemoryCategory::parameters)] == 400 * KiB);
  CHECK(stats.live_by[static_cast<int>(MemoryCategory::gradients)] == 200 * KiB);
  try {
    MemoryScope scope(MemoryCategory::activations);
    Tensor too_big = zeros({500 * KiB / 4}, {.device = dev});
    FAIL("expected OutOfMemory");
  } catch (const OutOfMemory& e) {
    const std::string msg = e.what();
    INFO(msg);
    CHECK(msg.find("sim:7 (test-device) is out of memory") != std::string::npos);
    CHECK(msg.find("allocating 500.00 KiB for activations") != std::string::npos);
    CHECK(msg.find("600.00 KiB of 1.00 MiB") != std::string::npos);
    CHECK(msg.find("parameters 400.00 KiB, gradients 200.00 KiB") != std::string::npos);
  }
  CHECK(allocator_for(dev).stats().live_bytes == 600 * KiB);  // the failed allocation left nothing
  // Data on a sim device is real: numerics are the host's.
  Tensor a = randn({5, 3}, {.device = dev}), b = randn({3, 4}, {.device = dev});
  test::check_close(matmul(a, b), matmul(a.to(kCPU), b.to(kCPU)), 0, 0);
}

TEST_CASE("sim device: an op advances the compute stream by its roofline time") {
  const Device dev{DeviceType::sim, 6};
  SimSpec spec = small_spec(0);
  spec.peak_flops_f32 = 1e12;
  spec.memory_bandwidth = 1e11;
  spec.launch_overhead = 1e-6;
  spec.efficiency = {};  // every kernel at the peaks
  sim::configure(dev, spec);
  Tensor a = ones({64, 128}, {.device = dev}), b = ones({128, 32}, {.device = dev});
  sim::reset(dev);
  Tensor c = matmul(a, b);
  const double flops = 2.0 * 64 * 128 * 32;                    // 524,288
  const double bytes = 4.0 * (64 * 128 + 128 * 32 + 64 * 32);  // 57,344
  const double expected = std::max(flops / 1e12, bytes / 1e11) + 1e-6;
  CHECK(sim::timeline(dev).now(sim::Stream::compute) == doctest::Approx(expected).epsilon(1e-12));
  CHECK(sim::timeline(dev).now(sim::Stream::comm) == 0);
  // A bandwidth-bound op: add reads two tensors and writes one.
  Tensor d = c + c;
  const double add = 4.0 * 3 * 64 * 32 / 1e11 + 1e-6;
  CHECK(sim::timeline(dev).now() == doctest::Approx(expected + add).epsilon(1e-12));
  // Views take no time.
  Tensor v = d.reshape({32, 64});
  CHECK(sim::timeline(dev).now() == doctest::Approx(expected + add).epsilon(1e-12));
}

TEST_CASE("sim device: an op's class sets how near its kernel comes to the peaks") {
  CHECK(op_class("linear") == OpClass::matmul);
  CHECK(op_class("matmul") == OpClass::matmul);
  CHECK(op_class("scaled_dot_product_attention") == OpClass::attention);
  CHECK(op_class("scaled_dot_product_attention_backward") == OpClass::attention_backward);
  CHECK(op_class("conv2d_weight_grad") == OpClass::conv);
  CHECK(op_class("layer_norm_backward") == OpClass::normalisation);
  CHECK(op_class("group_norm") == OpClass::normalisation);
  CHECK(op_class("adam_update_") == OpClass::optimizer);
  CHECK(op_class("softmax") == OpClass::elementwise);
  CHECK(op_class("add") == OpClass::elementwise);

  const Device dev{DeviceType::sim, 8};
  SimSpec spec = small_spec(0);
  spec.peak_flops_f32 = 1e12;
  spec.memory_bandwidth = 1e11;
  spec.launch_overhead = 1e-6;
  spec.efficiency = {};
  spec.efficiency[size_t(OpClass::matmul)] = {.compute = 0.5, .memory = 1, .overhead = 2e-6};
  spec.efficiency[size_t(OpClass::elementwise)] = {.compute = 1, .memory = 0.25, .overhead = 0};
  sim::configure(dev, spec);
  Tensor a = ones({64, 128}, {.device = dev}), b = ones({128, 32}, {.device = dev});
  sim::reset(dev);
  Tensor c = matmul(a, b);
  const double flops = 2.0 * 64 * 128 * 32;  // compute-bound at half the peak
  const double expected = flops / 0.5e12 + 2e-6 + 1e-6;
  CHECK(sim::timeline(dev).now() == doctest::Approx(expected).epsilon(1e-12));
  Tensor d = c + c;  // a quarter of the bandwidth
  CHECK(sim::timeline(dev).now() ==
        doctest::Approx(expected + 4.0 * 3 * 64 * 32 / 0.25e11 + 1e-6).epsilon(1e-12));
  // Attention is row-wise: each query row of each (batch, head) adds the class's row overhead.
  spec.efficiency[size_t(OpClass::attention)] = {
      .compute = 0.25, .memory = 1, .overhead = 3e-6, .row_overhead = 5e-9};
  sim::configure(dev, spec);
  const Tensor q = ones({2, 3, 10, 8}, {.device = dev}), kv = ones({2, 3, 12, 8}, {.device = dev});
  sim::reset(dev);
  (void)scaled_dot_product_attention(q, kv, kv);
  const double pairs = 2.0 * 3 * 10 * 12, rows = 2.0 * 3 * 10;
  const double read = 4.0 * (2 * 3 * 10 * 8 + 2 * 2 * 3 * 12 * 8);
  const double written = 4.0 * (2 * 3 * 10 * 8 + 2 * 3 * 10);      // the output and its logsumexp
  CHECK((read + written) / 1e11 < pairs * (4 * 8 + 5) / 0.25e12);  // bound by compute
  CHECK(sim::timeline(dev).now() ==
        doctest::Approx(pairs * (4 * 8 + 5) / 0.25e12 + rows * 5e-9 + 3e-6 + 1e-6).epsilon(1e-12));
}

TEST_CASE(
    "sim device: a kernel starts cold once the device has moved cold_bytes since its op ran") {
  sim::ColdStarts never;
  CHECK(never.run("add", 100, 0) == 0);  // no cold_bytes: kernels never start cold
  CHECK(never.run("mul", 100, 0) == 0);
  sim::ColdStarts starts;
  CHECK(starts.run("add", 100, 1000) == 1);  // its first run
  CHECK(starts.run("add", 100, 1000) == 0);  // right after itself
  CHECK(starts.run("mul", 300, 1000) == 1);
  starts.moved(100);                                           // work that is not priced
  CHECK(starts.run("add", 50, 1000) == doctest::Approx(0.4));  // mul's 300 bytes and those 100
  CHECK(starts.last_share() == doctest::Approx(0.4));
  starts.moved(5000);
  CHECK(starts.run("mul", 100, 1000) == 1);  // at most a whole cold start

  const Device dev{DeviceType::sim, 9};
  const double tensor = 4.0 * 64 * 32;  // bytes of each [64, 32] f32 tensor
  SimSpec spec = small_spec(0);
  spec.memory_bandwidth = 1e11;
  spec.launch_overhead = 0;
  spec.cold_bytes = 4 * tensor;
  spec.efficiency = {};
  spec.efficiency[size_t(OpClass::elementwise)].cold_overhead = 1e-5;
  sim::configure(dev, spec);
  const Tensor a = ones({64, 32}, {.device = dev});
  (void)(a + a);
  sim::reset(dev);  // every kernel starts cold again
  const double add = 3 * tensor / 1e11, scale = 2 * tensor / 1e11;
  Tensor b = a + a;  // add's first kernel since the reset: all of a cold start
  CHECK(sim::timeline(dev).now() == doctest::Approx(add + 1e-5).epsilon(1e-12));
  b = b + b;  // right after itself: none
  CHECK(sim::timeline(dev).now() == doctest::Approx(2 * add + 1e-5).epsilon(1e-12));
  b = b * 2.0;  // mul_scalar's first
  b = b + b;    // after mul_scalar's two tensors' bytes: half
  const double charged = 3 * add + scale + 1e-5 + 1e-5 + 0.5e-5;
  CHECK(sim::timeline(dev).now() == doctest::Approx(charged).epsilon(1e-12));
  // What a profile on the device shows is what the device charged, its cold start included; a
  // copy to the device, its time over the host link, and its bytes count towards cold starts.
  OpProfile profile;
  b = b * 2.0;  // after add's three tensors: three quarters
  CHECK(profile.outermost().seconds == doctest::Approx(scale + 0.75e-5).epsilon(1e-12));
  CHECK(sim::timeline(dev).now() == doctest::Approx(charged + scale + 0.75e-5).epsilon(1e-12));
  const Tensor up = ones({64, 32}).to(dev);
  const double link = spec.host_link.latency + tensor / spec.host_link.bandwidth;
  CHECK(profile.rows().at("copy").seconds == doctest::Approx(link).epsilon(1e-9));
  b = b * 2.0;  // after the copy's tensor alone: a quarter
  CHECK(profile.rows().at("mul_scalar").seconds ==
        doctest::Approx(2 * scale + 0.75e-5 + 0.25e-5).epsilon(1e-12));
  // `dlf profile --compare` prices cpu ops as that device would, cold starts counted from the ops
  // it has watched.
  OpClassTimes compare(spec, /*keep_ops=*/true);
  add_observer(&compare);
  const Tensor x = ones({64, 32});
  (void)(x + x);
  (void)(x + x);
  remove_observer(&compare);
  REQUIRE(compare.ops().size() == 3);  // full (ones), then the two adds
  CHECK(compare.ops()[1].cold == 1);
  CHECK(compare.ops()[2].cold == 0);
  const double full = tensor / 1e11;
  CHECK(compare.by_class()[size_t(OpClass::elementwise)].predicted ==
        doctest::Approx(full + 1e-5 + 2 * add + 1e-5).epsilon(1e-12));
  // Cleared (the skipped steps summed no more), it still knows which kernels ran: warm.
  compare.clear();
  CHECK(compare.ops().empty());
  CHECK(compare.by_class()[size_t(OpClass::elementwise)].calls == 0);
  CHECK(compare.by_op().empty());
  add_observer(&compare);
  (void)(x + x);
  remove_observer(&compare);
  REQUIRE(compare.ops().size() == 1);
  CHECK(compare.ops()[0].cold == 0);
  CHECK(compare.by_class()[size_t(OpClass::elementwise)].predicted ==
        doctest::Approx(add).epsilon(1e-12));
  // A spec's cold figures round-trip; negative ones are refused.
  const SimSpec back = sim_spec_from_json(to_json(spec));
  CHECK(back.cold_bytes == spec.cold_bytes);
  CHECK(back.efficiency[size_t(OpClass::elementwise)].cold_overhead == 1e-5);
  SimSpec bad = spec;
  bad.cold_bytes = -1;
  test::check_error([&] { bad.validate(); }, {"cold_bytes must be >= 0"});
  bad = spec;
  bad.efficiency[size_t(OpClass::matmul)].cold_overhead = -1e-6;
  test::check_error([&] { bad.validate(); }, {"efficiency of matmul", "cold_overhead >= 0"});
}

TEST_CASE("meta device: same shapes, memory and time as sim, no data") {
  const Device sim_dev{DeviceType::sim, 5}, meta_dev{DeviceType::meta, 5};
  sim::configure(sim_dev, small_spec(0));
  sim::configure(meta_dev, small_spec(0));
  auto step = [](Device dev) {
    sim::reset(dev);
    Tensor x = ones({8, 16}, {.device = dev});
    Tensor w = ones({16, 4}, {.device = dev});
    Tensor y = sum(gelu(matmul(x, w)));
    return std::pair{y.shape(), allocator_for(dev).stats().peak_bytes};
  };
  const int64_t host_before = host_allocator().stats().live_bytes;
  auto [meta_shape, meta_peak] = step(meta_dev);
  CHECK(host_allocator().stats().live_bytes == host_before);
  auto [sim_shape, sim_peak] = step(sim_dev);
  CHECK(shape_str(meta_shape) == shape_str(sim_shape));
  CHECK(meta_peak == sim_peak);
  CHECK(meta_peak >= 4 * (8 * 16 + 16 * 4));
  CHECK(sim::timeline(meta_dev).now() > 0);
  CHECK(sim::timeline(meta_dev).now() == sim::timeline(sim_dev).now());
}

TEST_CASE("meta device: plans a tensor far larger than this machine's memory") {
  const Device dev{DeviceType::meta, 4};
  sim::configure(dev, sim_preset("h100-80gb"));
  Tensor huge = Tensor::empty({1 << 20, 1 << 14}, DType::f32, dev);  // 64 GiB
  CHECK(allocator_for(dev).stats().live_bytes == int64_t(64) << 30);
  CHECK_THROWS_AS(Tensor::empty({1 << 20, 1 << 14}, DType::f32, dev), OutOfMemory);
}

TEST_CASE("collective cost: the alpha-beta model of ring, tree and point-to-point") {
  SimSpec s = small_spec(0);
  s.topology = Topology::nodes;
  s.node_size = 4;
  s.interconnect = {100e9, 2e-6};
  s.network = {10e9, 20e-6};
  const double bytes = 8e6;
  const std::vector<int> node{0, 1, 2, 3}, two_nodes{0, 1, 2, 3, 4, 5, 6, 7}, one{3};
  using sim::Collective;
  // Ring allreduce: 2(n-1) steps of one n-th of the buffer.
  CHECK(sim::collective_seconds(s, Collective::allreduce, bytes, node) ==
        doctest::Approx(6 * (2e-6 + 2e6 / 100e9)));
  CHECK(sim::collective_seconds(s, Collective::allreduce, bytes, two_nodes) ==
        doctest::Approx(14 * (20e-6 + 1e6 / 10e9)));
  CHECK(sim::collective_seconds(s, Collective::allgather, bytes, node) ==
        doctest::Approx(3 * (2e-6 + 2e6 / 100e9)));
  CHECK(sim::collective_seconds(s, Collective::broadcast, bytes, two_nodes) ==
        doctest::Approx(3 * (20e-6 + 8e6 / 10e9)));
  CHECK(sim::collective_seconds(s, Collective::send_recv, bytes, std::vector<int>{3, 4}) ==
        doctest::Approx(20e-6 + 8e6 / 10e9));
  CHECK(sim::collective_seconds(s, Collective::allreduce, bytes, one) == 0);
  // On a ring a message to a device three places on crosses three links.
  s.topology = Topology::ring;
  CHECK(sim::collective_seconds(s, Collective::send_recv, bytes, std::vector<int>{1, 4}) ==
        doctest::Approx(3 * 2e-6 + 8e6 / 100e9));
  CHECK(sim::collective_seconds(s, Collective::allgather, bytes, node) ==
        doctest::Approx(3 * (3 * 2e-6 + 2e6 / 100e9)));  // 3 -> 0 is three links back
}

TEST_CASE("trace: ops on a sim device become spans with shapes, memory a counter track") {
  const Device dev{DeviceType::sim, 3};
  sim::configure(dev, small_spec(0));
  sim::reset(dev);
  const auto path = std::filesystem::temp_directory_path() / "dlf_trace_test.json";
  trace::start();
  Tensor a = ones({4, 8}, {.device = dev});
  Tensor b = matmul(a, ones({8, 2}, {.device = dev}));
  trace::stop_and_write(path.string());
  std::stringstream text;
  text << std::ifstream(path).rdbuf();
  const std::string json = text.str();
  INFO(json);
  CHECK(json.rfind("{\"displayTimeUnit\"", 0) == 0);
  CHECK(json.find("\"name\":\"matmul [4, 8] [8, 2]\"") != std::string::npos);
  CHECK(json.find("\"process_name\",\"pid\":3,\"args\":{\"name\":\"sim:3\"") != std::string::npos);
  CHECK(json.find("\"thread_name\",\"pid\":3,\"tid\":0,\"args\":{\"name\":\"compute\"") !=
        std::string::npos);
  CHECK(json.find("{\"ph\":\"C\",\"pid\":3,\"name\":\"memory\"") != std::string::npos);
  CHECK(json.find("\"flops\":128") != std::string::npos);
  CHECK_FALSE(trace::enabled());
  std::filesystem::remove(path);
}

TEST_CASE("trace: cpu ops are wall-clock spans on a track per thread, memory a counter") {
  const auto path = std::filesystem::temp_directory_path() / "dlf_cpu_trace_test.json";
  trace::start();
  const double before = trace::now();
  (void)matmul(ones({2, 3}), ones({3, 4}));
  std::thread rank([] {
    trace::name_thread("rank 1");
    (void)matmul(ones({5, 3}), ones({3, 4}));
  });
  rank.join();
  CHECK(trace::now() > before);
  trace::stop_and_write(path.string());
  std::stringstream text;
  text << std::ifstream(path).rdbuf();
  const std::string json = text.str();
  INFO(json);
  CHECK(json.find("\"name\":\"matmul [2, 3] [3, 4]\"") != std::string::npos);
  CHECK(json.find("\"name\":\"matmul [5, 3] [3, 4]\"") != std::string::npos);
  CHECK(json.find("\"process_name\",\"pid\":200000,\"args\":{\"name\":\"cpu\"") !=
        std::string::npos);
  // This thread's tracks come first (tid 0 to 2: its streams), the rank's next (tid 3 to 5).
  CHECK(json.find("\"tid\":0,\"args\":{\"name\":\"thread 0 compute\"") != std::string::npos);
  CHECK(json.find("\"tid\":" + std::to_string(sim::kStreams) +
                  ",\"args\":{\"name\":\"rank 1 compute\"") != std::string::npos);
  CHECK(json.find("{\"ph\":\"C\",\"pid\":200000,\"name\":\"memory\"") != std::string::npos);
  CHECK(json.find("\"flops\":48") != std::string::npos);  // 2 x 3 x 4 multiply-adds
  std::filesystem::remove(path);
}

TEST_CASE("trace: a write that fails leaves the previous trace whole and no temporary") {
  const auto dir = std::filesystem::temp_directory_path() / "dlf_trace_failure_test";
  std::filesystem::remove_all(dir);
  const auto path = dir / "trace.json";  // in a directory that does not exist yet
  trace::start();
  trace::stop_and_write(path.string());
  std::stringstream before;
  before << std::ifstream(path).rdbuf();
  trace::start();
  (void)matmul(ones({2, 3}), ones({3, 4}));
  test::with_file_size_limit(before.str().size(), [&] {
    test::check_error(
        [&] { trace::stop_and_write(path.string()); },
        {"trace: saving " + path.string() + " failed", "the previous trace is unchanged"});
  });
  std::stringstream after;
  after << std::ifstream(path).rdbuf();
  CHECK(after.str() == before.str());
  CHECK(std::distance(std::filesystem::directory_iterator(dir), {}) == 1);  // no temporary
  std::filesystem::remove_all(dir);
}

TEST_CASE("copies to and from the host go over the host link, on the host stream") {
  const Device dev{DeviceType::sim, 9};
  sim::reset(dev);
  const sim::Timeline& clock = sim::timeline(dev);
  const LinkSpec& link = sim::spec_of(dev).host_link;
  const double copy = link.latency + 4000 / link.bandwidth;  // 1000 floats
  const Tensor up = zeros({1000}).to(dev);
  CHECK(clock.now(sim::Stream::host) == doctest::Approx(copy));
  CHECK(clock.now(sim::Stream::compute) == clock.now(sim::Stream::host));  // waited for the bytes
  const Tensor doubled = up * 2.0;
  const double computed = clock.now(sim::Stream::compute);
  CHECK(computed > copy);
  const Tensor down = doubled.to(kCPU);  // after the op that made it, without holding compute
  CHECK(clock.now(sim::Stream::host) == doctest::Approx(computed + copy));
  CHECK(clock.now(sim::Stream::compute) == computed);
  CHECK(clock.now(sim::Stream::comm) == 0);
  CHECK(down.to_vector<float>() == std::vector<float>(1000, 0.0f));
}

TEST_CASE("the host's work for a device: its roofline at the host's rates, on the host stream") {
  const Device dev{DeviceType::sim, 9};
  sim::reset(dev);
  const HostSpec& host = sim::spec_of(dev).host;  // a100-40gb's
  const sim::Timeline& clock = sim::timeline(dev);
  // Memory-bound (AdamW's update), then compute-bound: the larger of the two times.
  CHECK(sim::host_compute(dev, 1e6, 1e9) == doctest::Approx(1e9 / host.memory_bandwidth));
  CHECK(sim::host_compute(dev, 1e12, 1e3) == doctest::Approx(1e12 / host.flops));
  CHECK(clock.now(sim::Stream::host) ==
        doctest::Approx(1e9 / host.memory_bandwidth + 1e12 / host.flops));
  CHECK(clock.now(sim::Stream::compute) == 0);  // the device goes on meanwhile
  SimSpec untimed = sim_preset("a100-40gb");
  untimed.host = {};
  const Device other{DeviceType::sim, 10};
  sim::configure(other, untimed);
  sim::reset(other);
  CHECK(sim::host_compute(other, 1e12, 1e12) == 0);
  CHECK(sim::timeline(other).now(sim::Stream::host) == 0);
  sim::configure(other, sim_preset("a100-40gb"));
}

}  // namespace dlf
