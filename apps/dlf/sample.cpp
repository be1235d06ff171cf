#include "sample.h"

#include <cmath>
#include <cstdio>
#include <numbers>

#include <dlf/models/registry.h>

namespace dlf::app {

void run_generate(const GenerateOptions& o) {
  train::generate(o, [](std::string_view text) {
    std::fwrite(text.data(), 1, text.size(), stdout);
    std::fflush(stdout);
  });
}

double run_eval(const EvalOptions& o) {
  const train::CheckpointEvaluation r = train::evaluate_checkpoint(o);
  const models::Evaluation& e = r.value;
  std::printf("%s: validation loss %.4f", r.run.model.c_str(), e.loss);
  if (models::family_of(r.run.model).generates == models::Generates::text) {
    std::printf(", perplexity %.2f, %.3f bits per byte", std::exp(e.loss),
                e.loss / std::numbers::ln2);
  }
  if (!e.metric.empty()) std::printf(", %s %.4f", e.metric.c_str(), e.value);
  std::printf(
      " (%s)\n",
      r.batches > 0
          ? (std::to_string(r.batches) + " batches of " + std::to_string(r.run.batch)).c_str()
          : "the whole test set");
  return e.loss;
}

}  // namespace dlf::app
