// `kgtrain bench RECIPE... [OVERRIDE...] [--ablate LIST] [--suggest] [--json FILE] [--steps N] [--warmup N] ...`
#include "cli_checks.h"
#include "command.h"
#include "jobs/bench.h"

namespace kg::app {
namespace {

class BenchCommand : public Command {
 public:
  void add_flags(CLI::App& cmd) override {
    flags_.add(cmd, RecipeFlags::Kind::other);
    cmd.add_option("--ablate", req_.bench_ablate,
                   "toggles to time one at a time: precision, channels_last, workers, accum, "
                   "tf32, cudnn_benchmark, cuda_graphs, grad_checkpointing, cache, eval_batch")
        ->delimiter(',');
    cmd.add_flag("--suggest", req_.bench_suggest,
                 "the fastest combination of the toggles faster by more than 3% (timed), as "
                 "overrides to paste (every toggle when --ablate is not given)");
    cmd.add_option("--json", req_.bench_json, "report path (default RUN_DIR/bench.json)");
    cmd.add_option("--steps", req_.bench_steps, "timed steps per window (default 20)")->check(kCount);
    cmd.add_option("--warmup", req_.bench_warmup, "untimed steps first (default 3)")->check(kCountOrZero);
    cmd.add_option("--repeats", req_.bench_repeats, "timed windows per phase, the median reported (default 3)")
        ->check(kCount);
  }
  int run() override {
    static_cast<session::Session&>(req_) = flags_.resolve("bench");
    req_.bench_words = flags_.words_with_flags();
    return jobs::run_bench(req_);
  }

 private:
  RecipeFlags flags_;
  jobs::BenchRequest req_;
};

}  // namespace

KG_COMMAND(BenchCommand, "bench", 100,
           "time the recipe's training as fit runs it: decode + augment, loader, copy, forward, backward, optimizer "
           "step, training and evaluation steps, peak memory, TFLOP/s, the bottleneck; --ablate times toggles one at "
           "a time, --suggest combines the faster ones");

}  // namespace kg::app
