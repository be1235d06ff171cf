#include "test_util.h"

#include <dlf/device/allocator.h>

using namespace dlf;

TEST_CASE("DefaultDeviceGuard: factories follow it on this thread, nested, and restore kCPU") {
  CHECK(default_device() == kCPU);
  {
    DefaultDeviceGuard meta(kMeta);
    CHECK(zeros({2}).device() == kMeta);
    CHECK(Tensor::empty({2}, DType::f32).device() == kMeta);
    {
      DefaultDeviceGuard cpu(kCPU);
      CHECK(ones({1}).device() == kCPU);
    }
    CHECK(default_device() == kMeta);
    CHECK(from_vector<float>({1, 2}, {2}).device() == kCPU);  // host data stays on the host
  }
  CHECK(default_device() == kCPU);
  CHECK(zeros({2}).device() == kCPU);
}

TEST_CASE("a model built on meta has its shapes and no memory; to_empty then load_state_dict") {
  const models::GPTConfig config = models::gpt_config("gpt-nano");
  Generator gen(7);
  models::GPT reference(config, &gen);

  const int64_t cpu_allocations = allocator_for(kCPU).stats().allocations;
  std::unique_ptr<models::GPT> model;
  {
    DefaultDeviceGuard meta(kMeta);
    model = std::make_unique<models::GPT>(config);
  }
  CHECK(allocator_for(kCPU).stats().allocations == cpu_allocations);
  const nn::NamedTensors built = model->state_dict(), ref = reference.state_dict();
  REQUIRE(built.size() == ref.size());
  for (size_t i = 0; i < built.size(); ++i) {
    CHECK(built[i].first == ref[i].first);
    CHECK(built[i].second.device() == kMeta);
    CHECK(built[i].second.shape() == ref[i].second.shape());
  }

  model->to_empty(kCPU);
  model->load_state_dict(ref);
  const Tensor idx = from_vector<int64_t>({1, 2, 3, 4, 5, 6}, {1, 6});
  CHECK(model->forward(idx).to_vector<float>() == reference.forward(idx).to_vector<float>());
}

TEST_CASE("GPT-3 175B builds on meta at once, with its parameter count") {
  const models::GPTConfig config = models::gpt_config("gpt3-175b");
  DefaultDeviceGuard meta(kMeta);
  const models::GPT model(config);
  int64_t count = 0;
  for (const auto& [name, t] : model.named_parameters()) count += t.numel();
  // V·C + T·C + L·(12C² + 13C) + 2C with V 50257, T 2048, L 96, C 12288.
  CHECK(count == 174'604'259'328);
}
