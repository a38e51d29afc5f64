// `kgtrain merge-oof DIR... --out DIR`
#include "command.h"
#include "jobs/fit.h"

namespace kg::app {
namespace {

class MergeOofCommand : public Command {
 public:
  void add_flags(CLI::App& cmd) override {
    cmd.add_option("dirs", dirs_,
                   "run directories or fold directories holding oof_fold.csv + fold.json (latest: "
                   "<paths.runs>/latest of the environment layer)")
        ->required();
    cmd.add_option("--out", out_, "folder for oof.csv and cv.json")->required();
  }
  int run() override {
    for (auto& d : dirs_) d = RecipeFlags{}.run_folder(d);
    return jobs::run_merge_oof(dirs_, out_);
  }

 private:
  std::vector<std::string> dirs_;
  std::string out_;
};

}  // namespace

KG_COMMAND(MergeOofCommand, "merge-oof", 30,
           "merge out-of-fold predictions of fold runs (fit cv.fold=k on several machines, or cv.fold=all) into "
           "oof.csv + cv.json");

}  // namespace kg::app
