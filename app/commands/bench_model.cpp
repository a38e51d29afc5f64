// `kgtrain bench-model RECIPE... [OVERRIDE...] [FLAGS]`: its flags are the table jobs::bench_model_flags().
#include "command.h"
#include "flag_table.h"
#include "jobs/bench_model.h"

namespace kg::app {
namespace {

class BenchModelCommand : public Command {
 public:
  void add_flags(CLI::App& cmd) override {
    flags_.add(cmd, RecipeFlags::Kind::other);
    table_.add_to(cmd);
  }
  int run() override {
    jobs::BenchModelRequest req;
    static_cast<session::Session&>(req) = flags_.resolve("bench-model");
    req.flags = table_.values();
    return jobs::run_bench_model(req);
  }

 private:
  RecipeFlags flags_;
  FlagTable<jobs::BenchModelFlags> table_{jobs::bench_model_flags()};
};

}  // namespace

KG_COMMAND(BenchModelCommand, "bench-model", 90,
           "time training steps (forward, backward, the recipe's optimizer) of its model or others on synthetic input: "
           "NCHW vs channels_last, grad checkpointing");

}  // namespace kg::app
