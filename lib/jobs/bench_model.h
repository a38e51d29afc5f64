// `kgtrain bench-model`: training-step images/s of the recipe's model or others on synthetic input
// (lib/jobs/bench_model.cpp).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "jobs/job.h"

namespace kg::jobs {

struct BenchModelRequest : JobOptions {
  std::vector<std::string> bench_model_models;  // --models: model names (empty = the recipe's model)
  int64_t bench_model_size = 0;                 // --size: square input side in pixels (0 = data.image_size)
  int64_t bench_model_batch = 0;                // --batch: images per step (0 = train.batch_size)
  int64_t bench_model_steps = 5;                // --steps: timed steps per configuration; the median is reported
  int64_t bench_model_warmup = 1;               // --warmup: untimed steps before them
  std::vector<std::string> bench_model_layouts{"nchw", "channels_last"};  // --layouts: memory layouts
  bool bench_model_grad_checkpointing = false;  // --grad-checkpointing: also every configuration with it on
  std::string bench_model_json;                 // --json: JSON report path ("" = none)
};

int run_bench_model(const BenchModelRequest& o);

}  // namespace kg::jobs
