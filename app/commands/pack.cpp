// `kgtrain pack RECIPE... [OVERRIDE...] [--split train|test|both] [--out FILE] [--raw [--size H W]] [--threads N]`
#include "cli_checks.h"
#include "command.h"
#include "core/error.h"
#include "jobs/pack.h"

namespace kg::app {
namespace {

class PackCommand : public Command {
 public:
  void add_flags(CLI::App& cmd) override {
    flags_.add(cmd, RecipeFlags::Kind::other);
    cmd.add_option("--split", req_.pack_split, "train | test | both (default train)");
    cmd.add_option("--out", req_.out, "pack file (default DATA_ROOT/<data.train_pack or data.test_pack>)");
    cmd.add_flag("--raw", req_.pack_raw, "store decoded pixels resized to --size (no decoding at training time)");
    cmd.add_option("--size", size_, "--raw: H W of the stored pixels (default data.image_size)")->expected(2);
    cmd.add_option("--threads", req_.pack_threads, "decode threads (default: all cores)")->check(kCountOrZero);
  }
  int run() override {
    static_cast<session::Session&>(req_) = flags_.resolve("pack");
    if (!size_.empty()) {
      if (size_[0] <= 0 || size_[1] <= 0) throw UsageError("--size takes two positive integers H W");
      if (!req_.pack_raw)
        throw UsageError(
            "--size H W sets the size of --raw packs' pixels; without --raw the image files are stored as they are");
      req_.pack_height = size_[0];
      req_.pack_width = size_[1];
    }
    return jobs::run_pack(req_);
  }

 private:
  RecipeFlags flags_;
  jobs::PackRequest req_;
  std::vector<int64_t> size_;
};

}  // namespace

KG_COMMAND(PackCommand, "pack", 60, "pack the recipe's training/test table and its images into one memory-mapped file");

}  // namespace kg::app
