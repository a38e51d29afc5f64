// `kgtrain import-idx --train-images F --train-labels F --test-images F --test-labels F --out DIR [--packs]`: its
// flags are the table jobs::import_idx_flags().
#include "command.h"
#include "flag_table.h"
#include "jobs/import_idx.h"

namespace kg::app {
namespace {

class ImportIdxCommand : public Command {
 public:
  void add_flags(CLI::App& cmd) override { table_.add_to(cmd); }
  int run() override { return jobs::run_import_idx(table_.values()); }

 private:
  FlagTable<data::IdxImportOptions> table_{jobs::import_idx_flags()};
};

}  // namespace

KG_COMMAND(ImportIdxCommand, "import-idx", 110,
           "convert MNIST-format IDX files (.gz or raw) into the Kaggle CSV + PNG layout");

}  // namespace kg::app
