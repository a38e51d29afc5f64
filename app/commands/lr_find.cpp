// `kgtrain lr-find RECIPE... [OVERRIDE...] [--smoke]`
#include "command.h"
#include "jobs/lr_find.h"

namespace kg::app {
namespace {

class LrFindCommand : public Command {
 public:
  void add_flags(CLI::App& cmd) override {
    flags_.add(cmd, RecipeFlags::Kind::other);
    cmd.add_flag("--smoke", flags_.smoke, "at most 20 sweep updates from 2 updates' worth of batches per epoch");
  }
  int run() override {
    install_signal_handlers();
    return jobs::run_lr_find(flags_.resolve("lr-find"));
  }

 private:
  RecipeFlags flags_;
};

}  // namespace

KG_COMMAND(LrFindCommand, "lr-find", 20,
           "fastai's learning-rate finder on the recipe's training stream: an exponential lr sweep, the smoothed "
           "loss curve (lr_find.png) and four suggestions");

}  // namespace kg::app
