// The dlf command line.
#include <CLI/CLI.hpp>

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <string>

#include <dlf/dlf.h>
#include <dlf/parallel/mpi.h>

#include "bench_command.h"
#include "command_options.h"
#include "convert.h"
#include "demo.h"
#include "graph_command.h"
#include "plan.h"
#include "sample.h"
#include "tokenizer_command.h"
#include "train.h"
#include "validators.h"

namespace dlf::app {
namespace {

// One line on stderr and exit code 1; under mpirun the other processes, which may be waiting
// for this one in a collective, end with it.
int fail(const std::string& line) {
  std::cerr << line << "\n" << std::flush;
  if (parallel::launched_by_mpi()) parallel::mpi_abort(1);
  return 1;
}

// A command's output is part of its result: one that could not be written (a full disk, a
// closed pipe) is a failure, not a success.
int check_output_written(int code) {
  std::cout.flush();
  if (std::fflush(stdout) != 0 || std::ferror(stdout) || !std::cout) {
    const int error = errno;
    std::cerr << "dlf: writing the output failed (" << std::strerror(error) << ")\n";
    return code == 0 ? 1 : code;
  }
  if (std::fflush(stderr) != 0 || std::ferror(stderr)) return code == 0 ? 1 : code;
  return code;
}

int run(int argc, char** argv) {
  CLI::App app{"dlf: a deep-learning framework in C++"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "dlf " DLF_VERSION);
  int threads = 0;
  app.add_option("--threads", threads,
                 "CPU threads for kernels (default: DLF_NUM_THREADS or all cores)")
      ->check(whole(1, kMaxThreads));
  double collective_timeout = 0;
  app.add_option("--collective-timeout", collective_timeout,
                 "seconds a rank waits for its peers in a collective before giving up with an "
                 "error naming the missing ranks (default: DLF_COLLECTIVE_TIMEOUT or 600)")
      ->check(positive() & CLI::Range(0.0, 1e6));

  DemoOptions demo;
  CLI::App* demo_cmd = app.add_subcommand(
      "demo", "Fit a small MLP with autograd on the CPU and show its per-op cost");
  demo_cmd->add_option("--steps", demo.steps, "SGD steps")->check(whole(1, 10'000'000));
  demo_cmd->add_option("--hidden", demo.hidden, "hidden width")->check(whole(1, 1 << 16));
  demo_cmd->add_option("--lr", demo.lr, "learning rate")->check(positive());
  demo_cmd->add_option("--seed", demo.seed, "initialisation seed")->check(non_empty());

  TrainOptions train;
  GenerateOptions generate;
  EvalOptions eval;
  CLI::App *train_cmd = nullptr, *generate_cmd = nullptr, *eval_cmd = nullptr;
  add_train(app, train, train_cmd);
  TrainOptions profile;
  ProfileRequest profile_request;
  CLI::App* profile_cmd = nullptr;
  add_profile(app, profile, profile_request, profile_cmd);
  std::string calibrate_out;
  CLI::App* calibrate_cmd = nullptr;
  add_calibrate(app, calibrate_out, calibrate_cmd);
  add_generate(app, generate, generate_cmd);
  add_eval(app, eval, eval_cmd);
  PlanCommand plan;
  CLI::App* plan_cmd = nullptr;
  add_plan(app, plan, plan_cmd);
  ConvertOptions convert;
  CLI::App* convert_cmd = nullptr;
  add_convert(app, convert, convert_cmd);
  GraphCommand graph;
  CLI::App* graph_cmd = nullptr;
  add_graph(app, graph, graph_cmd);
  TokenizerCommand tokenizer;
  CLI::App* tokenizer_cmd = add_tokenizer(app, tokenizer);

  BenchCommand bench;
  CLI::App* bench_cmd = add_bench(app, bench);

  CLI::App* help_cmd = app.add_subcommand("help", "Show the commands, or one command's options");
  std::string help_topic;
  help_cmd->add_option("command", help_topic, "the command to explain");
  // Global options (--threads) are taken after the command's name too.
  for (CLI::App* sub : app.get_subcommands([](const CLI::App*) { return true; }))
    sub->fallthrough();

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e);  // --help, --version
    const CLI::App* command = named_command(app);
    std::cerr << "dlf: " << explain(app, e) << " (see dlf "
              << (command ? "help " + command->get_name() : "--help") << ")\n";
    return 2;
  }
  if (*help_cmd) {
    if (help_topic.empty()) {
      std::cout << app.get_formatter()->make_help(&app, "dlf", CLI::AppFormatMode::Normal);
    } else {
      const CLI::App* topic = nullptr;
      try {
        topic = app.get_subcommand(help_topic);
      } catch (const CLI::OptionNotFound&) {
        std::cerr << "dlf: help: no command '" << help_topic << "' (see dlf help)\n";
        return 2;
      }
      std::cout << topic->get_formatter()->make_help(topic, "dlf " + help_topic,
                                                     CLI::AppFormatMode::Normal);
    }
    return 0;
  }
  try {
    if (threads > 0) set_num_threads(threads);
    if (collective_timeout > 0) parallel::set_collective_timeout(collective_timeout);
    if (*demo_cmd) run_demo(demo);
    auto given = [](const CLI::App* cmd, TrainOptions& o) {
      for (const CLI::Option* option : cmd->get_options()) {
        if (option->count() > 0) o.given.insert(option->get_name());
      }
    };
    if (*train_cmd) {
      given(train_cmd, train);
      run_train(train);
    }
    if (*profile_cmd) {
      given(profile_cmd, profile);
      profile.profile = profile_request;
      run_train(profile);
    }
    if (*calibrate_cmd) run_calibrate(calibrate_out);
    if (*generate_cmd) run_generate(generate);
    if (*eval_cmd) run_eval(eval);
    if (*plan_cmd) run_plan(plan);
    if (*convert_cmd) run_convert(convert);
    if (*graph_cmd) run_graph(graph);
    if (*tokenizer_cmd || *tokenizer.tokenize) run_tokenizer(tokenizer);
    if (*bench_cmd) return run_bench(bench);  // its own exit codes (check: 1, 2)
  } catch (const Interrupted& e) {
    std::cerr << "dlf: " << e.what() << "\n";
    return 128 + e.signal();
  } catch (const Error& e) {
    return fail(std::string("dlf: ") + e.what());
  } catch (const std::bad_alloc&) {
    return fail("dlf: out of host memory (try a smaller --batch or --seq)");
  } catch (const std::exception& e) {  // a bug, but still one line and no abort
    return fail(std::string("dlf: internal error: ") + e.what());
  }
  return 0;
}

}  // namespace
}  // namespace dlf::app

int main(int argc, char** argv) {
  // Writes to a closed pipe or past `ulimit -f` fail with an error we report, instead of
  // killing the process.
  std::signal(SIGPIPE, SIG_IGN);
  std::signal(SIGXFSZ, SIG_IGN);
  return dlf::app::check_output_written(dlf::app::run(argc, argv));
}
