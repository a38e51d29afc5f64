// `kgtrain show-batch RECIPE... [OVERRIDE...] [FLAGS]`: its flags are the table jobs::show_batch_flags().
#include "command.h"
#include "flag_table.h"
#include "jobs/show_batch.h"

namespace kg::app {
namespace {

class ShowBatchCommand : public Command {
 public:
  void add_flags(CLI::App& cmd) override {
    flags_.add(cmd, RecipeFlags::Kind::other);
    table_.add_to(cmd);
  }
  int run() override {
    jobs::ShowBatchRequest r;
    static_cast<session::Session&>(r) = flags_.resolve("show-batch");
    r.flags = table_.values();
    return jobs::run_show_batch(r);
  }

 private:
  RecipeFlags flags_;
  FlagTable<jobs::ShowBatchFlags> table_{jobs::show_batch_flags()};
};

}  // namespace

KG_COMMAND(ShowBatchCommand, "show-batch", 25,
           "a PNG grid of training images after augmentation and mixup/cutmix, with their (soft) labels "
           "(fastai's show_batch)");

}  // namespace kg::app
