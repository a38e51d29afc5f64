// `kgtrain interpret RUN [OVERRIDE...] [FLAGS]`: its own flags are the table jobs::interpret_flags().
#include <filesystem>

#include "command.h"
#include "core/error.h"
#include "flag_table.h"
#include "jobs/interpret.h"
#include "session/latest_run.h"

namespace kg::app {
namespace {

class InterpretCommand : public Command {
 public:
  void add_flags(CLI::App& cmd) override {
    cmd.add_option("RUN", run_,
                   "a fit run folder (its recipe.toml, classes.json and oof.csv / oof_fold.csv), or latest "
                   "(<paths.runs>/latest, the newest fit)")
        ->required();
    cmd.add_option("OVERRIDE", overrides_, "overrides on the run's recipe (e.g. paths.data=... on another machine)");
    table_.add_to(cmd);
    flags_.add_only(cmd, {"device", "dry_run", "quiet"});  // --device: the CPU unless given
  }
  int run() override {
    if (run_ == session::kLatestWord) {
      RecipeFlags where = flags_;  // the runs root of the environment layer and the overrides
      where.words = overrides_;
      run_ = where.run_folder(run_);
    }
    const std::filesystem::path recipe = std::filesystem::path(run_) / "recipe.toml";
    KG_CHECK(std::filesystem::is_directory(run_), UsageError, "interpret: ", run_,
             " is not a folder (give a fit run folder)");
    KG_CHECK(std::filesystem::exists(recipe), UsageError, "interpret: ", run_,
             " has no recipe.toml: not a fit run folder");
    flags_.words = {recipe.string()};
    flags_.words.insert(flags_.words.end(), overrides_.begin(), overrides_.end());
    if (flags_.device.empty()) flags_.device = "cpu";
    static_cast<session::Session&>(req_) = flags_.resolve("interpret");
    req_.run = run_;
    req_.flags = table_.values();
    return jobs::run_interpret(req_);
  }

 private:
  RecipeFlags flags_;
  jobs::InterpretRequest req_;
  FlagTable<jobs::InterpretFlags> table_{jobs::interpret_flags()};
  std::string run_;
  std::vector<std::string> overrides_;
};

}  // namespace

KG_COMMAND(InterpretCommand, "interpret", 45,
           "what a fit run learned, from its out-of-fold predictions: confusion matrix, per-class table, "
           "top losses, most-confused pairs; --cam adds Grad-CAM overlays (on the CPU unless --device says otherwise)");

}  // namespace kg::app
