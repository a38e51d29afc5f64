// `kgtrain pseudo-label [RECIPE...] (--from-run RUN | --checkpoint DIR)... --out DIR [--rounds N]`
#include "cli_checks.h"
#include "command.h"
#include "core/error.h"
#include "jobs/pseudo_label.h"

namespace kg::app {
namespace {

class PseudoLabelCommand : public Command {
 public:
  void add_flags(CLI::App& cmd) override {
    flags_.add(cmd, RecipeFlags::Kind::predicting);
    cmd.add_option("--checkpoint", req_.models.checkpoints, "checkpoint directory (repeat to ensemble)");
    cmd.add_option("--from-run", req_.models.from_runs,
                   "a fit run directory, or latest (the newest fit): every fold's checkpoint (repeat to ensemble "
                   "runs)");
    cmd.add_option("--out", req_.out, "output folder for pseudo.csv, pseudo.toml and the rounds")->required();
    cmd.add_option("--rounds", req_.rounds,
                   "predict -> select -> retrain cycles: each retrains the recipe with the pseudo rows "
                   "(OUT/round_<r>/fit), reports its CV score and predicts the next round with it "
                   "(default 0: predict and select only)")
        ->check(kCountOrZero);
  }
  int run() override {
    install_signal_handlers();
    for (auto& run : req_.models.from_runs) run = flags_.run_folder(run);
    // No RECIPE.toml: the first --from-run's recipe.toml, overrides on top (its rounds retrain that recipe).
    if (!req_.models.from_runs.empty()) flags_.use_run_recipe(req_.models.from_runs.front());
    KG_CHECK(flags_.has_recipe_file(), UsageError,
             "pseudo-label needs RECIPE.toml files (or --from-run RUN, which reuses the run's recipe.toml)");
    static_cast<session::Session&>(req_) = flags_.resolve("pseudo-label");
    return jobs::run_pseudo_label(req_);
  }

 private:
  RecipeFlags flags_;
  jobs::PseudoLabelRequest req_;
};

}  // namespace

KG_COMMAND(PseudoLabelCommand, "pseudo-label", 50,
           "label the confident test rows with the ensemble and TTA views; writes pseudo.csv and a recipe layer "
           "pseudo.toml to retrain with");

}  // namespace kg::app
