// `kgtrain import-idx --train-images F --train-labels F --test-images F --test-labels F --out DIR [--packs]`
#include "cli_checks.h"
#include "command.h"
#include "jobs/import_idx.h"

namespace kg::app {
namespace {

class ImportIdxCommand : public Command {
 public:
  void add_flags(CLI::App& cmd) override {
    cmd.add_option("--train-images", o_.train_images, "training images IDX file")->required();
    cmd.add_option("--train-labels", o_.train_labels, "training labels IDX file")->required();
    cmd.add_option("--test-images", o_.test_images, "test images IDX file")->required();
    cmd.add_option("--test-labels", o_.test_labels, "test labels IDX file")->required();
    cmd.add_option("--out", o_.out_dir, "output folder (DATA)")->required();
    cmd.add_option("--threads", o_.threads, "PNG encoding threads")->check(kCount);
    cmd.add_flag("--packs", o_.packs,
                 "write raw packs DATA/train.kgpack + DATA/test.kgpack (tables inside) instead of PNG folders and "
                 "train/test CSVs: no decoding when training");
  }
  int run() override { return jobs::run_import_idx(o_); }

 private:
  data::IdxImportOptions o_;
};

}  // namespace

KG_COMMAND(ImportIdxCommand, "import-idx", 110,
           "convert MNIST-format IDX files (.gz or raw) into the Kaggle CSV + PNG layout");

}  // namespace kg::app
