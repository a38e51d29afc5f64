// `kgtrain tta-predict [RECIPE...] [OVERRIDE...] [FLAGS]`: its flags are the table jobs::tta_predict_flags().
#include "command.h"
#include "core/error.h"
#include "flag_table.h"
#include "jobs/tta_predict.h"

namespace kg::app {
namespace {

class TtaPredictCommand : public Command {
 public:
  void add_flags(CLI::App& cmd) override {
    flags_.add(cmd, RecipeFlags::Kind::predicting);
    table_.add_to(cmd);
  }
  int run() override {
    install_signal_handlers();
    jobs::TtaPredictRequest r;
    r.flags = table_.values();
    for (auto& run : r.flags.from_run) run = flags_.run_folder(run);
    // No RECIPE.toml: the first --from-run's recipe.toml (fit wrote it resolved), overrides on top.
    if (!r.flags.from_run.empty()) flags_.use_run_recipe(r.flags.from_run.front());
    KG_CHECK(flags_.has_recipe_file(), UsageError,
             "tta-predict needs RECIPE.toml files (or --from-run RUN, which reuses the run's recipe.toml)");
    static_cast<session::Session&>(r) = flags_.resolve("tta-predict");
    return jobs::run_tta_predict(r);
  }

 private:
  RecipeFlags flags_;
  FlagTable<jobs::TtaPredictFlags> table_{jobs::tta_predict_flags()};
};

}  // namespace

KG_COMMAND(TtaPredictCommand, "tta-predict", 40, "predict the test table with checkpoints, write the submission");

}  // namespace kg::app
