#include <dlf/train/sim_comparison.h>

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

namespace dlf::train {

void SimComparison::print(std::ostream& os, int64_t steps, double step_seconds) const {
  if (steps == 0) return;
  const double n = double(steps);
  char line[512];
  auto error = [](double predicted, double measured) {
    return measured > 0 ? 100 * (predicted - measured) / measured : 0.0;
  };
  std::snprintf(line, sizeof line,
                "predicted by sim:%s (roofline at its peaks and efficiencies + %.2f us an op) "
                "against measured, "
                "per step (each class's ops beneath it):\n%-40s %8s %12s %13s %8s\n",
                spec().name.c_str(), spec().launch_overhead * 1e6, "op class", "calls",
                "measured ms", "predicted ms", "error");
  os << line;
  auto row = [&](const std::string& name, const Totals& t) {
    std::snprintf(line, sizeof line, "%-40s %8.1f %12.3f %13.3f %+7.1f%%\n", name.c_str(),
                  double(t.calls) / n, t.measured / n * 1e3, t.predicted / n * 1e3,
                  error(t.predicted, t.measured));
    os << line;
  };
  double measured = 0, predicted = 0;
  for (int i = 0; i < kOpClasses; ++i) {
    const Totals& t = by_class()[size_t(i)];
    if (t.calls == 0) continue;
    measured += t.measured;
    predicted += t.predicted;
    row(std::string(op_class_name(OpClass(i))), t);
    std::vector<std::pair<std::string, Totals>> ops;
    for (const auto& [name, totals] : by_op())
      if (op_class(name) == OpClass(i)) ops.emplace_back(name, totals);
    std::ranges::sort(
        ops, [](const auto& a, const auto& b) { return a.second.measured > b.second.measured; });
    for (const auto& [name, totals] : ops) row("  " + name, totals);
  }
  std::snprintf(line, sizeof line, "%-40s %8s %12.3f %13.3f %+7.1f%%\n", "in ops", "",
                measured / n * 1e3, predicted / n * 1e3, error(predicted, measured));
  os << line;
  // A sim device's step is its ops' time: what the host does between ops is not modelled.
  std::snprintf(line, sizeof line, "%-40s %8s %12.3f %13.3f %+7.1f%%  (outside ops: %.3f ms)\n",
                "step", "", step_seconds / n * 1e3, predicted / n * 1e3,
                error(predicted, step_seconds), (step_seconds - measured) / n * 1e3);
  os << line;
}

}  // namespace dlf::train
