// `kgtrain bench-data RECIPE... [OVERRIDE...] [FLAGS]`: its flags are the table jobs::bench_data_flags().
#include "command.h"
#include "flag_table.h"
#include "jobs/bench_data.h"

namespace kg::app {
namespace {

class BenchDataCommand : public Command {
 public:
  void add_flags(CLI::App& cmd) override {
    flags_.add(cmd, RecipeFlags::Kind::other);
    table_.add_to(cmd);
  }
  int run() override {
    jobs::BenchDataRequest r;
    static_cast<session::Session&>(r) = flags_.resolve("bench-data");
    r.flags = table_.values();
    return jobs::run_bench_data(r);
  }

 private:
  RecipeFlags flags_;
  FlagTable<jobs::BenchDataFlags> table_{jobs::bench_data_flags()};
};

}  // namespace

KG_COMMAND(BenchDataCommand, "bench-data", 70,
           "time the recipe's input pipeline without the model: decode, decode + augmentation, the loader end to end");

}  // namespace kg::app
