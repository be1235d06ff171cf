#include "interrupt.h"

#include <unistd.h>

#include <atomic>
#include <csignal>

namespace dlf::app {
namespace {

std::atomic<int> requested{0};
static_assert(std::atomic<int>::is_always_lock_free, "used in a signal handler");

void on_signal(int signal) {
  int none = 0;
  if (!requested.compare_exchange_strong(none, signal)) {  // the second one: quit now
    std::signal(signal, SIG_DFL);
    std::raise(signal);
    return;
  }
  static const char line[] =
      "\ndlf: interrupted: finishing this step, then saving (interrupt again to quit now)\n";
  [[maybe_unused]] const ssize_t written = ::write(STDERR_FILENO, line, sizeof line - 1);
}

}  // namespace

void install_interrupt_handlers() {
  struct sigaction action {};
  action.sa_handler = on_signal;
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_RESTART;
  sigaction(SIGINT, &action, nullptr);
  sigaction(SIGTERM, &action, nullptr);
  sigaction(SIGHUP, &action, nullptr);  // a closed terminal or ssh session
}

int interrupt_signal() { return requested.load(); }

const char* signal_name(int signal) {
  return signal == SIGINT ? "SIGINT" : signal == SIGHUP ? "SIGHUP" : "SIGTERM";
}

}  // namespace dlf::app
