#include <dlf/device/trace.h>
#include <dlf/error.h>

#include <atomic>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <set>
#include <utility>
#include <vector>

namespace dlf::trace {
namespace {

struct Record {
  Device device;
  int stream;  // -1 for a counter
  std::string name;
  double start, seconds;  // a counter's value in `seconds`
  std::string args;
};

struct Sink {
  std::atomic<bool> on{false};
  std::mutex mutex;
  std::vector<Record> records;
};

Sink& sink() {
  static Sink s;
  return s;
}

// Chrome trace ids: one process per device (sim:i is pid i, meta and cpu come after), one
// thread per stream.
int pid_of(Device d) {
  switch (d.type) {
    case DeviceType::sim:
      return d.index;
    case DeviceType::meta:
      return 100000 + d.index;
    case DeviceType::cpu:
      return 200000 + d.index;
  }
  return d.index;
}

void write_escaped(std::ostream& os, const std::string& text) {
  for (char c : text) {
    if (c == '"' || c == '\\')
      os << '\\' << c;
    else if (static_cast<unsigned char>(c) < 0x20)
      os << ' ';
    else
      os << c;
  }
}

void write_json(std::ostream& os, const std::vector<Record>& records) {
  os << "{\"displayTimeUnit\":\"ms\",\"traceEvents\":[\n";
  std::set<std::pair<int, int>> threads;
  std::set<int> processes;
  bool first = true;
  auto sep = [&] {
    if (!first) os << ",\n";
    first = false;
  };
  char number[64];
  auto us = [&](double seconds) {
    std::snprintf(number, sizeof number, "%.3f", seconds * 1e6);
    return number;
  };
  for (const Record& r : records) {
    const int pid = pid_of(r.device);
    if (processes.insert(pid).second) {
      sep();
      os << R"({"ph":"M","name":"process_name","pid":)" << pid << R"(,"args":{"name":")"
         << r.device.str() << "\"}}";
      sep();
      os << R"({"ph":"M","name":"process_sort_index","pid":)" << pid << R"(,"args":{"sort_index":)"
         << pid << "}}";
    }
    sep();
    if (r.stream < 0) {
      os << R"({"ph":"C","pid":)" << pid << R"(,"name":")";
      write_escaped(os, r.name);
      os << R"(","ts":)" << us(r.start);
      std::snprintf(number, sizeof number, "%.0f", r.seconds);
      os << R"(,"args":{"bytes":)" << number << "}}";
      continue;
    }
    if (threads.insert({pid, r.stream}).second) {
      os << R"({"ph":"M","name":"thread_name","pid":)" << pid << R"(,"tid":)" << r.stream
         << R"(,"args":{"name":")" << sim::stream_name(static_cast<sim::Stream>(r.stream))
         << "\"}},\n";
    }
    os << R"({"ph":"X","pid":)" << pid << R"(,"tid":)" << r.stream << R"(,"name":")";
    write_escaped(os, r.name);
    os << R"(","ts":)" << us(r.start);
    os << R"(,"dur":)" << us(r.seconds);
    if (!r.args.empty()) os << R"(,"args":{)" << r.args << "}";
    os << "}";
  }
  os << "\n]}\n";
}

}  // namespace

void start() {
  Sink& s = sink();
  std::lock_guard lock(s.mutex);
  s.records.clear();
  s.on = true;
}

bool enabled() { return sink().on.load(std::memory_order_relaxed); }

void stop_and_write(const std::string& path) {
  Sink& s = sink();
  std::vector<Record> records;
  {
    std::lock_guard lock(s.mutex);
    s.on = false;
    records.swap(s.records);
  }
  const std::string temp = path + ".tmp";
  {
    std::ofstream out(temp);
    DLF_CHECK(out, "cannot write trace file '", temp, "'");
    write_json(out, records);
    DLF_CHECK(out.flush(), "writing trace file '", temp, "' failed");
  }
  std::error_code ec;
  std::filesystem::rename(temp, path, ec);
  DLF_CHECK(!ec, "cannot rename '", temp, "' to '", path, "': ", ec.message());
}

void span(Device device, sim::Stream stream, std::string name, double start, double seconds,
          std::string args_json) {
  Sink& s = sink();
  if (!s.on) return;
  std::lock_guard lock(s.mutex);
  s.records.push_back(
      {device, static_cast<int>(stream), std::move(name), start, seconds, std::move(args_json)});
}

void counter(Device device, std::string name, double time, double value) {
  Sink& s = sink();
  if (!s.on) return;
  std::lock_guard lock(s.mutex);
  s.records.push_back({device, -1, std::move(name), time, value, {}});
}

}  // namespace dlf::trace
