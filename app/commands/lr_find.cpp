// `kgtrain lr-find RECIPE... [OVERRIDE...] [--smoke]`: the common flags (session/common_flags.h) are its flags.
#include "command.h"
#include "jobs/lr_find.h"

namespace kg::app {
namespace {

class LrFindCommand : public Command {
 public:
  void add_flags(CLI::App& cmd) override {
    flags_.add(cmd, RecipeFlags::Kind::finding);
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
