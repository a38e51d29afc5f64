// `kgtrain pretrain RECIPE... [OVERRIDE...] [--resume] [--smoke]`: the common flags (session/common_flags.h), and
// --resume, which continues the run of --run-dir from its newest checkpoint.
#include "command.h"
#include "jobs/pretrain.h"

namespace kg::app {
namespace {

class PretrainCommand : public Command {
 public:
  void add_flags(CLI::App& cmd) override {
    flags_.add(cmd, RecipeFlags::Kind::finding);
    cmd.add_flag("--resume", resume_,
                 "continue the run of --run-dir DIR from its newest complete checkpoint (after a kill or a signal)");
  }
  int run() override {
    install_signal_handlers();
    jobs::PretrainRequest req;
    static_cast<session::Session&>(req) = flags_.resolve("pretrain");
    req.resume = resume_;
    return jobs::run_pretrain(req);
  }

 private:
  RecipeFlags flags_;
  bool resume_ = false;
};

}  // namespace

KG_COMMAND(PretrainCommand, "pretrain", 22,
           "continued masked-language-model pre-training of a text recipe's encoder on its own train and test texts "
           "(whole-word masking, 80-10-10); writes RUN/model, a Hugging Face folder model.pretrained fine-tunes");

}  // namespace kg::app
