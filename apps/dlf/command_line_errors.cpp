// What a mistyped command line is told: the command or option it was closest to.
#include <algorithm>
#include <sstream>
#include <vector>

#include "command_options.h"

namespace dlf::app {
namespace {

// Edit distance (insertions, deletions, substitutions) of two words.
size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = above;
    }
  }
  return row[b.size()];
}

// The candidate closest to `word` by edit distance, if close enough to be a typo; else "".
std::string closest(const std::string& word, const std::vector<std::string>& candidates) {
  std::string best;
  size_t best_distance = std::max<size_t>(2, word.size() / 4) + 1;
  for (const std::string& c : candidates) {
    const size_t d = edit_distance(word, c);
    if (d < best_distance) best_distance = d, best = c;
  }
  return best;
}

// The options a command line may give to `command` (null: none was named): its own and the
// global ones.
std::vector<std::string> option_names(const CLI::App& app, const CLI::App* command) {
  std::vector<std::string> names;
  for (const CLI::App* a : {&app, command}) {
    if (a == nullptr) continue;
    for (const CLI::Option* option : a->get_options()) {
      for (const std::string& name : option->get_lnames()) names.push_back("--" + name);
    }
  }
  return names;
}

}  // namespace

const CLI::App* named_command(const CLI::App& app) {
  const std::vector<const CLI::App*> named =
      app.get_subcommands([](const CLI::App* sub) { return sub->parsed(); });
  return named.empty() ? nullptr : named.front();
}

std::string explain(const CLI::App& app, const CLI::ParseError& e) {
  const CLI::App* command = named_command(app);
  if (command == nullptr) {
    std::vector<std::string> commands;
    for (const CLI::App* sub : app.get_subcommands([](const CLI::App*) { return true; }))
      commands.push_back(sub->get_name());
    for (const std::string& word : app.remaining()) {
      if (word.starts_with("-")) continue;
      const std::string best = closest(word, commands);
      return "unknown command " + word + (best.empty() ? "" : " (did you mean " + best + "?)");
    }
  }
  const std::string line = e.what();
  if (dynamic_cast<const CLI::ExtrasError*>(&e) == nullptr) return line;
  std::istringstream words(line.substr(line.find(':') + 1));
  for (std::string word; words >> word;) {
    if (!word.starts_with("-")) continue;
    const std::string option = word.substr(0, word.find('='));
    const std::string best = closest(option, option_names(app, command));
    return "unknown option " + option + " of dlf" + (command ? " " + command->get_name() : "") +
           (best.empty() ? "" : " (did you mean " + best + "?)");
  }
  return line;
}

}  // namespace dlf::app
