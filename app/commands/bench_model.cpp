// `kgtrain bench-model RECIPE... [OVERRIDE...] [--models a,b] [--size N] [--batch N] [--steps N] ...`
#include "cli_checks.h"
#include "command.h"
#include "jobs/bench_model.h"

namespace kg::app {
namespace {

class BenchModelCommand : public Command {
 public:
  void add_flags(CLI::App& cmd) override {
    flags_.add(cmd, RecipeFlags::Kind::other);
    cmd.add_option("--models", req_.bench_model_models,
                   "model names, e.g. resnet18,efficientnet_b0 (default: the recipe's model)")
        ->delimiter(',');
    cmd.add_option("--size", req_.bench_model_size, "square input side in pixels (default data.image_size)")
        ->check(kCount);
    cmd.add_option("--batch", req_.bench_model_batch, "images per step (default train.batch_size)")->check(kCount);
    cmd.add_option("--steps", req_.bench_model_steps, "timed steps per configuration, the median reported (default 5)")
        ->check(kCount);
    cmd.add_option("--warmup", req_.bench_model_warmup, "untimed steps before them (default 1)")->check(kCountOrZero);
    cmd.add_option("--layouts", req_.bench_model_layouts, "memory layouts: nchw,channels_last (default both)")
        ->delimiter(',')
        ->check(CLI::IsMember({"nchw", "channels_last"}));
    cmd.add_flag("--grad-checkpointing", req_.bench_model_grad_checkpointing,
                 "also time each configuration with gradient checkpointing, with the activation memory held after "
                 "forward");
    cmd.add_option("--json", req_.bench_model_json, "also write the report as JSON (schema_version 1) to FILE");
  }
  int run() override {
    static_cast<jobs::JobOptions&>(req_) = flags_.resolve("bench-model");
    return jobs::run_bench_model(req_);
  }

 private:
  RecipeFlags flags_;
  jobs::BenchModelRequest req_;
};

}  // namespace

KG_COMMAND(BenchModelCommand, "bench-model", 90,
           "time training steps (forward, backward, AdamW) of the recipe's model or others on synthetic input: "
           "NCHW vs channels_last, grad checkpointing");

}  // namespace kg::app
