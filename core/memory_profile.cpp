#include <dlf/core/memory_profile.h>
#include <dlf/device/device_memory.h>
#include <dlf/device/sim_device.h>
#include <dlf/device/trace.h>

#include <algorithm>
#include <cstdio>
#include <tuple>

namespace dlf {

namespace {
thread_local std::vector<std::string> labels;
}  // namespace

MemoryLabel::MemoryLabel(std::string label) { labels.push_back(std::move(label)); }

MemoryLabel::~MemoryLabel() { labels.pop_back(); }

std::string MemoryLabel::current() {
  std::string joined;
  for (const std::string& l : labels) joined += (joined.empty() ? "" : "/") + l;
  return joined;
}

MemoryProfile::MemoryProfile(Device device) : device_(device) { add_observer(this); }

MemoryProfile::~MemoryProfile() { remove_observer(this); }

void MemoryProfile::on_op_start(const OpDef& /*op*/) { ++depth_; }

void MemoryProfile::on_op(const OpDef& op, Inputs /*inputs*/, const Attrs& /*attrs*/,
                          std::span<const Tensor> outputs) {
  --depth_;
  for (const Tensor& t : outputs) {
    if (!t.defined() || t.device() != device_) continue;
    const std::shared_ptr<Storage>& s = t.storage();
    auto it = made_.find(s.get());
    if (it != made_.end() && it->second.storage.lock() == s) continue;  // a view, or in place
    made_[s.get()] = {s, op.name, MemoryLabel::current()};
  }
  if (depth_ > 0) return;
  ++ops_;
  const MemoryStats stats = allocator_for(device_).stats();
  timeline_.push_back({ops_, op.name, stats.live_by});
  if (trace::enabled()) {
    const double now =
        device_.type == DeviceType::cpu ? trace::now() : sim::timeline(device_).now();
    for (int c = 0; c < kMemoryCategories; ++c)
      trace::counter(device_,
                     "memory: " + std::string(memory_category_name(static_cast<MemoryCategory>(c))),
                     now, double(stats.live_by[c]));
  }
  if (stats.live_bytes > peak_.live_bytes) take_snapshot(stats.live_bytes, stats.live_by, op.name);
  if (made_.size() > pruned_at_) {
    std::erase_if(made_, [](const auto& kv) { return kv.second.storage.expired(); });
    pruned_at_ = std::max<size_t>(1024, 2 * made_.size());
  }
}

void MemoryProfile::take_snapshot(int64_t live_bytes, const BytesByCategory& live_by,
                                  const std::string& after) {
  std::map<std::tuple<std::string, MemoryCategory, std::string>, MemoryRow> groups;
  int64_t tracked = 0;
  for (const auto& [address, made] : made_) {
    const std::shared_ptr<Storage> s = made.storage.lock();
    if (!s || s->released()) continue;
    MemoryRow& row = groups[{made.op, s->category(), made.label}];
    row.op = made.op;
    row.category = s->category();
    row.label = made.label;
    ++row.tensors;
    row.bytes += int64_t(s->nbytes());
    tracked += int64_t(s->nbytes());
  }
  peak_ = {.op = ops_,
           .after = after,
           .live_bytes = live_bytes,
           .live_by = live_by,
           .rows = {},
           .untracked_bytes = live_bytes - tracked};
  for (auto& [key, row] : groups) peak_.rows.push_back(std::move(row));
  std::stable_sort(peak_.rows.begin(), peak_.rows.end(),
                   [](const MemoryRow& a, const MemoryRow& b) { return a.bytes > b.bytes; });
}

void MemoryProfile::print(std::ostream& os, int rows, int points) const {
  char line[512];
  std::snprintf(line, sizeof line, "memory of %s at its peak, after op %ld (%s): %s (%s)\n",
                device_.str().c_str(), long(peak_.op), peak_.after.c_str(),
                format_bytes(double(peak_.live_bytes)).c_str(),
                format_by_category(peak_.live_by).c_str());
  os << line;
  std::snprintf(line, sizeof line, "  %12s %6s  %-16s %7s  %s\n", "bytes", "share", "category",
                "tensors", "made by (under)");
  os << line;
  auto print_row = [&](const std::string& made_by, const char* category, int64_t tensors,
                       int64_t bytes) {
    std::snprintf(line, sizeof line, "  %12s %5.1f%%  %-16s %7s  %s\n",
                  format_bytes(double(bytes)).c_str(),
                  100.0 * double(bytes) / double(std::max<int64_t>(1, peak_.live_bytes)), category,
                  tensors > 0 ? std::to_string(tensors).c_str() : "", made_by.c_str());
    os << line;
  };
  int64_t rest_bytes = 0, rest_tensors = 0;
  for (size_t i = 0; i < peak_.rows.size(); ++i) {
    const MemoryRow& r = peak_.rows[i];
    if (int(i) >= rows) {
      rest_bytes += r.bytes;
      rest_tensors += r.tensors;
      continue;
    }
    print_row(r.label.empty() ? r.op : r.op + " (" + r.label + ")",
              std::string(memory_category_name(r.category)).c_str(), r.tensors, r.bytes);
  }
  if (rest_tensors > 0) print_row("other ops", "", rest_tensors, rest_bytes);
  print_row("no op watched here (made before: parameters, state, inputs)", "", 0,
            peak_.untracked_bytes);
  if (timeline_.empty() || points <= 0) return;
  os << "live bytes by category, op by op (a sample):\n";
  std::vector<size_t> picks;
  for (int p = 0; p < points; ++p)
    picks.push_back(size_t(double(p) * double(timeline_.size() - 1) / std::max(1, points - 1)));
  if (peak_.op > 0) picks.push_back(size_t(peak_.op - 1));
  std::sort(picks.begin(), picks.end());
  picks.erase(std::unique(picks.begin(), picks.end()), picks.end());
  for (size_t i : picks) {
    const MemorySample& s = timeline_[i];
    int64_t total = 0;
    for (int64_t b : s.live_by) total += b;
    std::snprintf(line, sizeof line, "  op %6ld %-28s %12s  %s%s\n", long(s.op), s.name.c_str(),
                  format_bytes(double(total)).c_str(), format_by_category(s.live_by).c_str(),
                  s.op == peak_.op ? "  <- peak" : "");
    os << line;
  }
}

}  // namespace dlf
