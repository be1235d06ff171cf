#include <dlf/core/op_profile.h>

#include <algorithm>
#include <cstdio>
#include <string>

namespace dlf {

void OpProfile::on_op_start(const OpDef&) { stack_.push_back({std::chrono::steady_clock::now()}); }

void OpProfile::on_op(const OpDef& op, Inputs inputs, const Attrs& attrs,
                      std::span<const Tensor> outputs) {
  const Cost c = op_cost(op, inputs, attrs, outputs);
  double seconds = 0, children = 0;
  if (!stack_.empty()) {
    seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - stack_.back().start)
                  .count();
    children = stack_.back().children;
    stack_.pop_back();
    // A simulated device's clock instead: what it charged an outermost op, which covers the ops
    // that op dispatches (a collective: none, its time is the comm stream's).
    const Device device = !outputs.empty()  ? outputs[0].device()
                          : !inputs.empty() ? inputs[0].device()
                                            : kCPU;
    if (device.type != DeviceType::cpu) {
      seconds = stack_.empty() && !op.view && !op.collective ? last_charged_seconds() : 0;
      children = 0;
    }
    if (!stack_.empty()) stack_.back().children += seconds;
  }
  auto add = [&](Row& row) {
    ++row.calls;
    row.seconds += seconds;
    row.self_seconds += seconds - children;
    row.flops += c.flops;
    row.bytes += c.bytes();
  };
  std::string key = op.name;
  if (options_.by_shape) {
    // A multi-tensor op's (sum_squares over every gradient) first shapes and its input count.
    constexpr size_t kShapesShown = 4;
    for (size_t i = 0; i < inputs.size() && i < kShapesShown; ++i) {
      key += ' ';
      key += inputs[i].defined() ? shape_str(inputs[i].shape()) : std::string("-");
    }
    if (inputs.size() > kShapesShown) key += " ... (" + std::to_string(inputs.size()) + " inputs)";
  }
  add(rows_[key]);
  if (stack_.empty()) add(outermost_);
}

void OpProfile::print(std::ostream& os, std::optional<Roofline> roofline) const {
  std::vector<std::pair<std::string, Row>> sorted(rows_.begin(), rows_.end());
  std::sort(sorted.begin(), sorted.end(), [](const auto& a, const auto& b) {
    return a.second.self_seconds > b.second.self_seconds;
  });
  const double profiled = outermost_.seconds;
  size_t width = 34;
  for (const auto& [name, row] : sorted) width = std::max(width, name.size());
  auto print_row = [&](const std::string& name, const Row& row) {
    const double gflops = row.seconds > 0 ? row.flops / row.seconds / 1e9 : 0.0;
    const double gbytes = row.seconds > 0 ? row.bytes / row.seconds / 1e9 : 0.0;
    char line[256];
    os << name << std::string(width - name.size(), ' ');
    std::snprintf(line, sizeof line, " %8ld %10.2f %10.2f %6.1f%% %12.1f %9.1f %8.1f", row.calls,
                  row.self_seconds * 1e3, row.seconds * 1e3,
                  profiled > 0 ? 100 * row.self_seconds / profiled : 0.0, row.flops / 1e6, gflops,
                  gbytes);
    os << line;
    if (roofline && row.seconds > 0 && (row.flops > 0 || row.bytes > 0)) {
      // Compute-bound when the op's FLOPs per byte exceed the peaks' ratio (the ridge point).
      const bool compute = row.flops * roofline->bytes_per_s > row.bytes * roofline->flops_per_s;
      const double reached =
          compute ? gflops * 1e9 / roofline->flops_per_s : gbytes * 1e9 / roofline->bytes_per_s;
      std::snprintf(line, sizeof line, "  %-7s %6.1f%%", compute ? "compute" : "memory",
                    100 * reached);
      os << line;
    }
    os << "\n";
  };
  char header[256];
  os << "op" << std::string(width - 2, ' ');
  std::snprintf(header, sizeof header, " %8s %10s %10s %7s %12s %9s %8s", "calls", "self ms",
                "total ms", "self%", "MFLOP", "GFLOP/s", "GB/s");
  os << header << (roofline ? "  bound   of peak" : "") << "\n";
  for (const auto& [name, row] : sorted) print_row(name, row);
  print_row("all ops (outermost)", outermost_);
}

}  // namespace dlf
