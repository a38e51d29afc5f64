// `kgtrain show-batch RECIPE... [OVERRIDE...] [--out PNG] [--n N] [--epoch E] [--views [--id ID]]`
#include "command.h"
#include "core/error.h"
#include "jobs/show_batch.h"

namespace kg::app {
namespace {

class ShowBatchCommand : public Command {
 public:
  void add_flags(CLI::App& cmd) override {
    flags_.add(cmd, RecipeFlags::Kind::other);
    cmd.add_option("--out", out_, "PNG to write (default show_batch.png)");
    cmd.add_option("--n", n_, "images in the grid (1..256, default 16)");
    cmd.add_option("--epoch", epoch_, "epoch whose augmentation, size and mixing to show (1-based, default 1)");
    cmd.add_flag("--views", views_, "instead: every TTA view (tta.views) of one test image, as tta-predict makes them");
    cmd.add_option("--id", id_, "with --views: the test row's id (default: the first row of data.test_csv)");
  }
  int run() override {
    jobs::ShowBatchRequest r;
    static_cast<jobs::JobOptions&>(r) = flags_.resolve("show-batch");
    r.out = out_;
    r.n = n_;
    r.epoch = epoch_;
    r.views = views_;
    r.id = id_;
    if (!id_.empty() && !views_) throw UsageError("--id picks the test image of --views: add --views");
    return jobs::run_show_batch(r);
  }

 private:
  RecipeFlags flags_;
  std::string out_ = "show_batch.png";
  int64_t n_ = 16, epoch_ = 1;
  bool views_ = false;
  std::string id_;
};

}  // namespace

KG_COMMAND(ShowBatchCommand, "show-batch", 25,
           "a PNG grid of training images after augmentation and mixup/cutmix, with their (soft) labels "
           "(fastai's show_batch)");

}  // namespace kg::app
