// The dlf command line.
#include <CLI/CLI.hpp>

#include <iostream>

#include <dlf/dlf.h>

int main(int argc, char** argv) {
  CLI::App app{"dlf: a deep-learning framework"};
  int threads = 0;
  app.add_option("--threads", threads, "CPU threads for kernels (default: DLF_NUM_THREADS or all cores)");
  CLI11_PARSE(app, argc, argv);
  try {
    if (threads > 0) dlf::set_num_threads(threads);
    std::cout << dlf::randn({2, 3}) << "\n";
  } catch (const dlf::Error& e) {
    std::cerr << "dlf: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
