// `kgtrain bench RECIPE... [OVERRIDE...] [FLAGS]`: its own flags are the table jobs::bench_flags().
#include "command.h"
#include "flag_table.h"
#include "jobs/bench.h"

namespace kg::app {
namespace {

class BenchCommand : public Command {
 public:
  void add_flags(CLI::App& cmd) override {
    flags_.add(cmd, RecipeFlags::Kind::other);
    table_.add_to(cmd);
  }
  int run() override {
    jobs::BenchRequest r;
    static_cast<session::Session&>(r) = flags_.resolve("bench");
    r.words = flags_.words_with_flags();
    r.flags = table_.values();
    return jobs::run_bench(r);
  }

 private:
  RecipeFlags flags_;
  FlagTable<jobs::BenchFlags> table_{jobs::bench_flags()};
};

}  // namespace

KG_COMMAND(BenchCommand, "bench", 100,
           "time the recipe's training as fit runs it: decode + augment, loader, copy, forward, backward, optimizer "
           "step, training and evaluation steps, peak memory, TFLOP/s, the bottleneck; --ablate times toggles one at "
           "a time, --suggest combines the faster ones");

}  // namespace kg::app
