#include <dlf/device/atomic_file.h>
#include <dlf/device/trace.h>
#include <dlf/error.h>

#include <atomic>
#include <chrono>
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
  int stream;  // -1 for a counter; on the cpu, the recording thread's track of that stream
  std::string name;
  double start, seconds;  // a counter's value in `seconds`
  std::string args;
};

struct Sink {
  std::atomic<bool> on{false};
  std::mutex mutex;
  std::vector<Record> records;
  std::chrono::steady_clock::time_point origin;
  std::vector<std::string> thread_names;  // the cpu tracks' threads, by index
  int generation = 0;                     // start()s so far
};

Sink& sink() {
  static Sink s;
  return s;
}

// The calling thread's index among the cpu tracks' threads of this trace (the sink's mutex
// held).
thread_local int thread_index = -1, thread_generation = -1;
thread_local std::string thread_label;
int this_thread(Sink& s) {
  if (thread_generation != s.generation) {
    thread_generation = s.generation;
    thread_index = int(s.thread_names.size());
    s.thread_names.push_back(thread_label.empty() ? "thread " + std::to_string(thread_index)
                                                  : thread_label);
  }
  return thread_index;
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

void write_json(std::ostream& os, const std::vector<Record>& records,
                const std::vector<std::string>& thread_names) {
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
      const auto stream = static_cast<sim::Stream>(r.stream % sim::kStreams);
      std::string name(sim::stream_name(stream));
      if (r.device.type == DeviceType::cpu)
        name = thread_names[size_t(r.stream / sim::kStreams)] + " " + name;
      os << R"({"ph":"M","name":"thread_name","pid":)" << pid << R"(,"tid":)" << r.stream
         << R"(,"args":{"name":")";
      write_escaped(os, name);
      os << "\"}},\n";
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
  s.thread_names.clear();
  ++s.generation;
  s.origin = std::chrono::steady_clock::now();
  s.on = true;
}

bool enabled() { return sink().on.load(std::memory_order_relaxed); }

double now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - sink().origin).count();
}

std::string name_thread(std::string name) { return std::exchange(thread_label, std::move(name)); }

void stop_and_write(const std::string& path) {
  Sink& s = sink();
  std::vector<Record> records;
  std::vector<std::string> thread_names;
  {
    std::lock_guard lock(s.mutex);
    s.on = false;
    records.swap(s.records);
    thread_names.swap(s.thread_names);
  }
  replace_file(path, "trace", [&](const std::filesystem::path& temp) {
    std::ofstream out(temp);
    DLF_CHECK(out, "cannot write ", temp.string());
    write_json(out, records, thread_names);
    DLF_CHECK(out.flush(), "writing ", temp.string(), " failed");
  });
}

void span(Device device, sim::Stream stream, std::string name, double start, double seconds,
          std::string args_json) {
  Sink& s = sink();
  if (!s.on) return;
  std::lock_guard lock(s.mutex);
  int track = static_cast<int>(stream);
  if (device.type == DeviceType::cpu) track += this_thread(s) * sim::kStreams;
  s.records.push_back({device, track, std::move(name), start, seconds, std::move(args_json)});
}

void counter(Device device, std::string name, double time, double value) {
  Sink& s = sink();
  if (!s.on) return;
  std::lock_guard lock(s.mutex);
  s.records.push_back({device, -1, std::move(name), time, value, {}});
}

}  // namespace dlf::trace
