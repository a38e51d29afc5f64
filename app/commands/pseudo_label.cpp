// `kgtrain pseudo-label [RECIPE...] [OVERRIDE...] [FLAGS]`: its flags are the table jobs::pseudo_label_flags().
#include "command.h"
#include "core/error.h"
#include "flag_table.h"
#include "jobs/pseudo_label.h"

namespace kg::app {
namespace {

class PseudoLabelCommand : public Command {
 public:
  void add_flags(CLI::App& cmd) override {
    flags_.add(cmd, RecipeFlags::Kind::predicting);
    table_.add_to(cmd);
  }
  int run() override {
    install_signal_handlers();
    jobs::PseudoLabelRequest r;
    r.flags = table_.values();
    for (auto& run : r.flags.from_run) run = flags_.run_folder(run);
    // No RECIPE.toml: the first --from-run's recipe.toml (fit wrote it resolved), overrides on top.
    if (!r.flags.from_run.empty()) flags_.use_run_recipe(r.flags.from_run.front());
    KG_CHECK(flags_.has_recipe_file(), UsageError,
             "pseudo-label needs RECIPE.toml files (or --from-run RUN, which reuses the run's recipe.toml)");
    static_cast<session::Session&>(r) = flags_.resolve("pseudo-label");
    return jobs::run_pseudo_label(r);
  }

 private:
  RecipeFlags flags_;
  FlagTable<jobs::PseudoLabelFlags> table_{jobs::pseudo_label_flags()};
};

}  // namespace

KG_COMMAND(PseudoLabelCommand, "pseudo-label", 50,
           "label the confident test rows with the ensemble and TTA views; writes pseudo.csv and a recipe layer "
           "pseudo.toml to retrain with");

}  // namespace kg::app
