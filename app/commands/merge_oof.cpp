// `kgtrain merge-oof DIR... --out DIR`: its flags are the table jobs::merge_oof_flags().
#include "command.h"
#include "flag_table.h"
#include "jobs/merge_oof.h"

namespace kg::app {
namespace {

class MergeOofCommand : public Command {
 public:
  void add_flags(CLI::App& cmd) override {
    cmd.add_option("dirs", dirs_,
                   "run directories or fold directories holding oof_fold.csv + fold.json (latest: "
                   "<paths.runs>/latest of the environment layer)")
        ->required();
    table_.add_to(cmd);
  }
  int run() override {
    for (auto& d : dirs_) d = RecipeFlags{}.run_folder(d);
    return jobs::run_merge_oof(dirs_, table_.values());
  }

 private:
  std::vector<std::string> dirs_;
  FlagTable<jobs::MergeOofFlags> table_{jobs::merge_oof_flags()};
};

}  // namespace

KG_COMMAND(MergeOofCommand, "merge-oof", 30,
           "merge out-of-fold predictions of fold runs (fit cv.fold=k on several machines, or cv.fold=all) into "
           "oof.csv + cv.json");

}  // namespace kg::app
