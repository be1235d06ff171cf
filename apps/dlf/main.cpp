// The dlf command line.
#include <CLI/CLI.hpp>

#include <iostream>
#include <string>

#include <dlf/dlf.h>

#include "demo.h"

namespace {
// CLI11's PositiveNumber prints its range as a 300-digit number; this says it plainly.
const CLI::Validator kPositive(
    [](std::string& value) -> std::string {
      try {
        if (std::stod(value) > 0) return "";
      } catch (const std::exception&) {
      }
      return "must be a positive number, got '" + value + "'";
    },
    "POSITIVE");
}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"dlf: a deep-learning framework in C++"};
  app.require_subcommand(1);
  int threads = 0;
  app.add_option("--threads", threads,
                 "CPU threads for kernels (default: DLF_NUM_THREADS or all cores)")
      ->check(kPositive);

  dlf::app::DemoOptions demo;
  CLI::App* demo_cmd = app.add_subcommand(
      "demo", "Fit a small MLP with autograd on the CPU and show its per-op cost");
  demo_cmd->add_option("--steps", demo.steps, "SGD steps")->check(kPositive);
  demo_cmd->add_option("--hidden", demo.hidden, "hidden width")->check(kPositive);
  demo_cmd->add_option("--lr", demo.lr, "learning rate")->check(kPositive);
  demo_cmd->add_option("--seed", demo.seed, "initialisation seed");

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e);  // --help
    std::cerr << "dlf: " << e.what() << " (see dlf --help)\n";
    return 2;
  }
  try {
    if (threads > 0) dlf::set_num_threads(threads);
    if (*demo_cmd) dlf::app::run_demo(demo);
  } catch (const dlf::Error& e) {
    std::cerr << "dlf: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
