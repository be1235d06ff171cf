// Command lines of the benchmarks: CLI11 (--help, typed values, one line for a bad flag).
#pragma once
#include <cstdlib>

#include <CLI/CLI.hpp>

namespace dlf::bench {

/// Parses argv into `app`'s options; on --help prints the usage and exits 0, on a bad command
/// line prints the error and exits non-zero.
inline void parse_or_exit(CLI::App& app, int argc, char** argv) {
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    std::exit(app.exit(e));
  }
}

}  // namespace dlf::bench
