// A bf16 step moves half the bytes of an f32 one: every op's bytes, from the ops' own cost
// formulas (host-independent), on one forward and backward of each family's smallest model.
#include <dlf/models/example_step.h>

#include "test_util.h"

using namespace dlf;

namespace {

struct StepBytes {
  std::map<std::string, OpProfile::Row> rows;
  int64_t parameters = 0;
};

StepBytes step_bytes(const std::string& model, std::optional<DType> autocast) {
  manual_seed(1);
  Generator data(3);
  const models::ExampleStep step = models::example_step(model, 2, 0, data);
  OpProfile profile;
  {
    AutocastGuard guard(autocast);
    step.loss(step.batch).backward();
  }
  return {profile.rows(), step.model->num_parameters()};
}

double bytes_of(const StepBytes& s, const std::string& op) {
  const auto it = s.rows.find(op);
  return it == s.rows.end() ? 0 : it->second.bytes;
}

}  // namespace

TEST_CASE("bf16: every op of a step moves at most half f32's bytes, the casts only the weights") {
  for (const std::string model : {"gpt-nano", "bert-tiny", "vit-tiny", "unet-tiny"}) {
    INFO(model);
    const StepBytes f32 = step_bytes(model, std::nullopt);
    const StepBytes bf16 = step_bytes(model, DType::bf16);
    double step = 0;
    for (const auto& [op, row] : f32.rows) step += row.bytes;
    for (const auto& [op, row] : f32.rows) {
      // Below 1 % of the step: the losses' and the inputs' f32 arithmetic (a DDPM's noising, a
      // UNet's timestep embedding), which stay in f32 by design.
      if (op == "copy" || row.bytes < 0.01 * step) continue;
      INFO(op, ": f32 ", row.bytes, " bytes, bf16 ", bytes_of(bf16, op));
      // 0.52: the normalisations' f32 statistics and the losses' f32 results.
      CHECK(bytes_of(bf16, op) <= 0.52 * row.bytes);
    }
    // The casts: each parameter once down to bf16 (4 bytes read, 2 written) and its gradient
    // once back up (2 + 4); an activation cast between lowered ops would add to them.
    const double casts = bytes_of(bf16, "copy") - bytes_of(f32, "copy");
    INFO("casts ", casts, " bytes, ", bf16.parameters, " parameters");
    CHECK(casts <= 12.0 * static_cast<double>(bf16.parameters));
  }
}
