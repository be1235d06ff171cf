#include "op_counter.h"

#include <algorithm>
#include <cstdio>
#include <vector>

namespace dlf::app {

void OpCounter::print(std::ostream& os) const {
  std::vector<std::pair<std::string, Row>> sorted(rows_.begin(), rows_.end());
  std::sort(sorted.begin(), sorted.end(),
            [](const auto& a, const auto& b) { return a.second.flops > b.second.flops; });
  double total_flops = 0, total_bytes = 0;
  for (const auto& [name, row] : sorted) total_flops += row.flops, total_bytes += row.bytes;
  char line[160];
  std::snprintf(line, sizeof line, "%-22s %8s %12s %8s %12s\n", "op", "calls", "MFLOP", "flops%",
                "MB moved");
  os << line;
  for (const auto& [name, row] : sorted) {
    std::snprintf(line, sizeof line, "%-22s %8ld %12.2f %7.1f%% %12.2f\n", name.c_str(), row.calls,
                  row.flops / 1e6, total_flops > 0 ? 100 * row.flops / total_flops : 0.0,
                  row.bytes / 1e6);
    os << line;
  }
  std::snprintf(line, sizeof line, "%-22s %8s %12.2f %8s %12.2f\n", "total", "", total_flops / 1e6,
                "", total_bytes / 1e6);
  os << line;
}

}  // namespace dlf::app
