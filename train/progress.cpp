#include <dlf/train/progress.h>

#include <unistd.h>

#include <cstdio>
#include <memory>
#include <optional>
#include <utility>

namespace dlf::train {

Progress::Progress(int64_t first, int64_t total, int64_t every, std::string unit)
    : first_(first),
      total_(total),
      every_(every < 1 ? 1 : every),
      unit_(std::move(unit)),
      terminal_(isatty(STDERR_FILENO) != 0),
      start_(std::chrono::steady_clock::now()) {}

std::string Progress::eta(int64_t step) const {
  const double elapsed =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  const int64_t done = step + 1 - first_, left = total_ - step - 1;
  const auto seconds = static_cast<int64_t>(done > 0 ? elapsed / double(done) * double(left) : 0);
  char buf[32];
  std::snprintf(buf, sizeof buf, "%ld:%02ld", static_cast<long>(seconds / 60),
                static_cast<long>(seconds % 60));
  return buf;
}

void Progress::update(int64_t step, double loss, double per_s, const std::string& extra) {
  const bool last = step + 1 == total_;
  if (terminal_) {
    constexpr int kWidth = 30;
    const int filled = static_cast<int>(kWidth * (step + 1) / total_);
    std::fprintf(stderr, "\r[%s%s] step %ld/%ld  loss %.4f  %.0f %s/s%s  ETA %s \x1b[K",
                 std::string(filled, '#').c_str(), std::string(kWidth - filled, '.').c_str(),
                 static_cast<long>(step + 1), static_cast<long>(total_), loss, per_s, unit_.c_str(),
                 extra.c_str(), eta(step).c_str());
    bar_drawn_ = true;
  } else if ((step + 1) % every_ == 0 || step == first_ || last) {
    std::fprintf(stderr, "step %ld/%ld  loss %.4f  %.0f %s/s%s  ETA %s\n",
                 static_cast<long>(step + 1), static_cast<long>(total_), loss, per_s, unit_.c_str(),
                 extra.c_str(), eta(step).c_str());
  }
  std::fflush(stderr);
}

void Progress::note(const std::string& line) {
  if (bar_drawn_) std::fputc('\n', stderr);
  bar_drawn_ = false;
  std::fprintf(stderr, "%s\n", line.c_str());
}

void Progress::finish() {
  if (bar_drawn_) std::fputc('\n', stderr);
  bar_drawn_ = false;
}

PhaseProgress::PhaseProgress(bool show, std::string what, int64_t total, std::string unit)
    : show_(show),
      terminal_(isatty(STDERR_FILENO) != 0),
      what_(std::move(what)),
      unit_(std::move(unit)),
      total_(total),
      last_(std::chrono::steady_clock::now()) {}

PhaseProgress::~PhaseProgress() {
  if (show_ && terminal_) std::fputs("\r\x1b[K", stderr);
}

void PhaseProgress::update(int64_t done) {
  if (!show_) return;
  const auto now = std::chrono::steady_clock::now();
  if (terminal_) {
    std::fprintf(stderr, "\r%s: %ld/%ld %s\x1b[K", what_.c_str(), static_cast<long>(done),
                 static_cast<long>(total_), unit_.c_str());
  } else if (now - last_ >= std::chrono::seconds(5) || done == total_) {
    std::fprintf(stderr, "%s: %ld/%ld %s\n", what_.c_str(), static_cast<long>(done),
                 static_cast<long>(total_), unit_.c_str());
    last_ = now;
  }
  std::fflush(stderr);
}

std::function<void(int64_t done, int64_t total)> evaluation_progress() {
  auto phase = std::make_shared<std::optional<PhaseProgress>>();
  return [phase](int64_t done, int64_t total) {
    if (done == total) return phase->reset();
    if (!*phase) phase->emplace(true, "test set", total, "images");
    (*phase)->update(done);
  };
}

}  // namespace dlf::train
