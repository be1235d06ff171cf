#include <dlf/device/cold_starts.h>

#include <algorithm>

namespace dlf::sim {

double ColdStarts::run(std::string_view name, double bytes, double cold_bytes) {
  auto last = moved_at_last_run_.find(name);
  if (last == moved_at_last_run_.end()) {
    last = moved_at_last_run_.emplace(std::string(name), moved_).first;
    last_share_ = cold_bytes > 0 ? 1 : 0;
  } else {
    last_share_ = cold_bytes > 0 ? std::min(1.0, (moved_ - last->second) / cold_bytes) : 0;
  }
  moved_ += bytes;
  last->second = moved_;
  return last_share_;
}

}  // namespace dlf::sim
