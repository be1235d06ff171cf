#include <dlf/core/op_profile.h>

#include <algorithm>
#include <cstdio>

namespace dlf {

void OpProfile::on_op_start(const OpDef&) { starts_.push_back(std::chrono::steady_clock::now()); }

void OpProfile::on_op(const OpDef& op, Inputs inputs, const Attrs& attrs,
                      std::span<const Tensor> outputs) {
  double seconds = 0;
  if (!starts_.empty()) {
    seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - starts_.back()).count();
    starts_.pop_back();
  }
  const Cost c = op_cost(op, inputs, attrs, outputs);
  auto add = [&](Row& row) {
    ++row.calls;
    row.seconds += seconds;
    row.flops += c.flops;
    row.bytes += c.bytes_read + c.bytes_written;
  };
  add(rows_[op.name]);
  if (starts_.empty()) add(outermost_);
}

void OpProfile::print(std::ostream& os) const {
  std::vector<std::pair<std::string, Row>> sorted(rows_.begin(), rows_.end());
  std::sort(sorted.begin(), sorted.end(),
            [](const auto& a, const auto& b) { return a.second.seconds > b.second.seconds; });
  Row total;
  for (const auto& [name, row] : sorted) {
    total.calls += row.calls;
    total.seconds += row.seconds;
    total.flops += row.flops;
    total.bytes += row.bytes;
  }
  auto print_row = [&](const std::string& name, const Row& row) {
    char line[200];
    std::snprintf(line, sizeof line, "%-34s %8ld %10.2f %6.1f%% %12.1f %9.1f %8.1f\n", name.c_str(),
                  row.calls, row.seconds * 1e3,
                  total.seconds > 0 ? 100 * row.seconds / total.seconds : 0.0, row.flops / 1e6,
                  row.seconds > 0 ? row.flops / row.seconds / 1e9 : 0.0,
                  row.seconds > 0 ? row.bytes / row.seconds / 1e9 : 0.0);
    os << line;
  };
  char header[200];
  std::snprintf(header, sizeof header, "%-34s %8s %10s %7s %12s %9s %8s\n", "op", "calls", "ms",
                "time%", "MFLOP", "GFLOP/s", "GB/s");
  os << header;
  for (const auto& [name, row] : sorted) print_row(name, row);
  print_row("total (nested ops count twice)", total);
}

}  // namespace dlf
