// A kgtrain subcommand as a registered component (Caffe's command registry): each lives in its own file
// app/commands/<name>.cpp and registers its name, one-line help, flags and run with KG_COMMAND. The
// dispatcher (cli.cpp) builds the command line from the table, so adding a command touches one file.
//
// Every command parses into its own request struct (jobs::FitRequest, ...: the flags bind to its
// fields), resolves the recipe words with RecipeFlags, and calls its job in lib/jobs.
#pragma once
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <CLI/CLI.hpp>

#include "core/macros.h"
#include "flag_table.h"
#include "session/common_flags.h"
#include "session/session.h"

namespace kg::app {

class Command {
 public:
  virtual ~Command() = default;
  // Declares the command's flags on `cmd`; CLI11 writes the parsed values into the command's members.
  virtual void add_flags(CLI::App& cmd) = 0;
  // Runs the command after a successful parse; its exit code (kg::Error is thrown, cli.cpp maps it).
  virtual int run() = 0;
};

struct CommandSpec {
  std::string name;
  std::string help;
  int order = 0;  // position in `kgtrain --help`
  std::function<std::unique_ptr<Command>()> make;
};

// Adds a command to the table (at static initialisation); false when the name is taken (a build error in
// practice: commands_in_order() throws for it).
bool register_command(CommandSpec spec);
// The registered commands sorted by `order`; InternalError for a name registered twice.
std::vector<const CommandSpec*> commands_in_order();

#define KG_COMMAND(Class, name, order, help)                                                                       \
  static const bool KG_CONCAT(kg_command_registered_, __COUNTER__) [[maybe_unused]] = ::kg::app::register_command( \
      {name, help, order, [] { return std::unique_ptr<::kg::app::Command>(new Class()); }})

// The recipe words and the flags every recipe command shares (the table session::common_flags()); resolve() turns
// them into the validated recipe of session::Session.
struct RecipeFlags : session::CommonFlags {
  std::vector<std::string> words;  // RECIPE.toml files, then overrides

  enum class Kind {
    training,    // fit: RECIPE optional (--resume), --smoke and --check-data
    predicting,  // tta-predict, pseudo-label: RECIPE optional (--from-run), --smoke
    finding,     // lr-find: RECIPE required, --smoke
    other,       // the rest: RECIPE required, no --smoke
  };
  // The RECIPE words and the common flags of `kind`.
  void add(CLI::App& cmd, Kind kind);
  // Only the common flags `keys` names (interpret, show: words of their own); the values are taken and checked when
  // `cmd` is parsed.
  void add_only(CLI::App& cmd, const std::vector<std::string>& keys);
  // Resolves the layers (base, groups, environment, overrides), validates, fills the shared options.
  session::Session resolve(const std::string& command) const;
  // The words with --device and --seed as overrides (the command line a suggestion repeats).
  std::vector<std::string> words_with_flags() const;

  // Whether the words name a RECIPE.toml (the rest are overrides).
  bool has_recipe_file() const;
  // paths.runs as these words set it: their recipe files and overrides over the environment layer (no
  // recipe file: the environment layer's, e.g. /kaggle/working/runs on Kaggle).
  std::string runs_root() const;
  // `run` itself, or for the word `latest` the folder <runs_root()>/latest points at (printed to stderr
  // unless quiet); UsageError when there is no run yet.
  std::string run_folder(const std::string& run) const;
  // Without a RECIPE.toml among the words: puts the recipe.toml of run folder `run` (or of the run holding
  // folder `run`, e.g. a checkpoint) first, so overrides apply on top of it. False when none is found.
  bool use_run_recipe(const std::string& run);

 private:
  std::shared_ptr<FlagTable<session::CommonFlags>> table_;
};

// This process's argv, as main() received it (fit --nproc runs it again as each rank).
void set_process_args(int argc, char** argv);
std::pair<int, char**> process_args();
// The process environment as a map.
std::map<std::string, std::string> environment();
// SIGINT/SIGTERM set the stop flag (jobs save at the next step boundary); a second one kills at once.
void install_signal_handlers();

}  // namespace kg::app
