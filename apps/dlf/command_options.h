// The options of dlf's commands (each add_* defines one subcommand and where its options land)
// and the one line a command line CLI11 refused gets.
#pragma once
#include <CLI/CLI.hpp>

#include <string>

#include "calibrate.h"
#include "convert.h"
#include "graph_command.h"
#include "plan.h"
#include "sample.h"
#include "train.h"

namespace dlf::app {

/// --schedule and --virtual-stages, as dlf train and dlf plan take them.
void add_schedule_options(CLI::App* cmd, std::string& schedule, int& virtual_stages);
/// --zero STAGE, or --zero alone for stage 1; without it, no sharding (stage 0).
void add_zero_option(CLI::App* cmd, int& zero, const std::string& what);

/// The subcommands: each adds itself to `app`, its options to `o`, and sets `cmd`.
///@{
void add_train(CLI::App& app, TrainOptions& o, CLI::App*& cmd);
void add_profile(CLI::App& app, TrainOptions& o, ProfileRequest& request, CLI::App*& cmd);
void add_calibrate(CLI::App& app, std::string& out, CLI::App*& cmd);
void add_generate(CLI::App& app, GenerateOptions& o, CLI::App*& cmd);
void add_convert(CLI::App& app, ConvertOptions& o, CLI::App*& cmd);
void add_eval(CLI::App& app, EvalOptions& o, CLI::App*& cmd);
void add_plan(CLI::App& app, PlanCommand& o, CLI::App*& cmd);
void add_graph(CLI::App& app, GraphCommand& o, CLI::App*& cmd);
///@}

/// The command a command line named, or null.
const CLI::App* named_command(const CLI::App& app);
/// One line for a command line CLI11 refused: an unknown command gets the command it is closest
/// to, an unknown option the option of that command.
std::string explain(const CLI::App& app, const CLI::ParseError& e);

}  // namespace dlf::app
