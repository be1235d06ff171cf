// MemoryProfile: what is alive at the peak, by op, category and label; the timeline; blocks
// labelled by their path in the model, backward by "backward".
#include "test_util.h"

#include <dlf/core/memory_profile.h>
#include <dlf/models/gpt.h>

#include <algorithm>
#include <map>
#include <set>
#include <sstream>

using namespace dlf;

TEST_CASE("memory profile: the tensors alive at the peak, by the op that made them and label") {
  const Tensor w = randn({128, 128}, {.dtype = DType::f64});  // made before: not tracked
  const int64_t one = 128 * 128 * 8;
  MemoryProfile profile(kCPU);
  Tensor a = w * 2.0;
  Tensor b = matmul(a, w);
  {
    const MemoryLabel block("block");
    Tensor c = b.exp();
    Tensor d;
    {
      MemoryScope scope(MemoryCategory::activations);
      d = c.tanh();
    }
    CHECK(MemoryLabel::current() == "block");
  }
  a = Tensor();
  b = Tensor();
  const MemorySnapshot& peak = profile.peak();
  CHECK(peak.after == "tanh");
  CHECK(peak.op == 4);  // mul_scalar, matmul, exp, tanh (the scalar 2 is no op)
  REQUIRE(peak.rows.size() == 4);
  std::map<std::string, MemoryRow> by_op;
  for (const MemoryRow& r : peak.rows) by_op[r.op] = r;
  CHECK(by_op["mul_scalar"].bytes == one);
  CHECK(by_op["matmul"].label.empty());
  CHECK(by_op["exp"].label == "block");
  CHECK(by_op["exp"].category == MemoryCategory::temporaries);
  CHECK(by_op["tanh"].category == MemoryCategory::activations);
  for (const MemoryRow& r : peak.rows) CHECK(r.tensors == 1);
  CHECK(peak.live_bytes - peak.untracked_bytes == 4 * one);
  CHECK(peak.live_by[int(MemoryCategory::activations)] >= one);
  // The timeline: one sample an op, and the bytes drop once the block's tensors are gone.
  REQUIRE(profile.timeline().size() == 4);
  const BytesByCategory& last = profile.timeline().back().live_by;
  CHECK(last[int(MemoryCategory::activations)] == peak.live_by[int(MemoryCategory::activations)]);
  std::ostringstream table;
  profile.print(table);
  CHECK(table.str().find("exp (block)") != std::string::npos);
  CHECK(table.str().find("<- peak") != std::string::npos);
}

TEST_CASE("memory profile: a GPT's activations at the peak, labelled by block and backward") {
  manual_seed(1);
  models::GPT gpt(models::gpt_config("gpt-nano"));
  const Tensor idx = randint(0, 256, {2, 32}), targets = randint(0, 256, {2, 32});
  MemoryProfile profile(kCPU);
  Tensor loss = gpt.loss(idx, targets);
  loss.backward();
  loss = Tensor();
  const MemorySnapshot& peak = profile.peak();
  int64_t tracked = 0;
  std::set<std::string> labels;
  for (const MemoryRow& r : peak.rows) {
    tracked += r.bytes;
    labels.insert(r.label);
  }
  CHECK(tracked == peak.live_bytes - peak.untracked_bytes);
  // Every block's forward left activations for backward, under its path in the model.
  for (int64_t b = 0; b < gpt.config().layers; ++b)
    CHECK(labels.contains("transformer.h." + std::to_string(b)));
  CHECK(std::any_of(labels.begin(), labels.end(),
                    [](const std::string& l) { return l.starts_with("backward"); }));
  CHECK(peak.untracked_bytes >= 4 * gpt.num_parameters());  // the parameters, made before
}
