// `kgtrain tta-predict [RECIPE...] (--from-run RUN | --checkpoint DIR | --weights F)... [--out F] [--probs F] [--oof]`
#include "command.h"
#include "core/error.h"
#include "jobs/tta_predict.h"

namespace kg::app {
namespace {

class TtaPredictCommand : public Command {
 public:
  void add_flags(CLI::App& cmd) override {
    flags_.add(cmd, RecipeFlags::Kind::predicting);
    cmd.add_option("--checkpoint", req_.models.checkpoints,
                   "checkpoint directory (repeat to ensemble), e.g. RUN/checkpoints/best");
    cmd.add_option("--weights", req_.models.weights,
                   "a safetensors weights file for the recipe's model and the classes of its "
                   "data (repeat to ensemble; mixes with --checkpoint)");
    cmd.add_option("--out", req_.out, "submission CSV path (default paths.submission, else RUN_DIR/submission.csv)");
    cmd.add_option("--probs", req_.probs, "also write per-class probabilities to this CSV");
    cmd.add_option("--from-run", req_.models.from_runs,
                   "a fit run directory, or latest (<paths.runs>/latest, the newest fit): every fold's checkpoint "
                   "(tta.weights picks best, last, ema or swa); repeat to ensemble runs");
    cmd.add_flag("--oof", req_.oof,
                 "with --from-run: predict each fold's validation rows with its own model and the views; "
                 "writes oof_tta.csv and cv_tta.json (TTA measured on CV)");
  }
  int run() override {
    install_signal_handlers();
    for (auto& run : req_.models.from_runs) run = flags_.run_folder(run);
    // No RECIPE.toml: the first --from-run's recipe.toml (fit wrote it resolved), overrides on top.
    if (!req_.models.from_runs.empty()) flags_.use_run_recipe(req_.models.from_runs.front());
    KG_CHECK(flags_.has_recipe_file(), UsageError,
             "tta-predict needs RECIPE.toml files (or --from-run RUN, which reuses the run's recipe.toml)");
    static_cast<session::Session&>(req_) = flags_.resolve("tta-predict");
    return jobs::run_tta_predict(req_);
  }

 private:
  RecipeFlags flags_;
  jobs::TtaPredictRequest req_;
};

}  // namespace

KG_COMMAND(TtaPredictCommand, "tta-predict", 40, "predict the test table with checkpoints, write the submission");

}  // namespace kg::app
