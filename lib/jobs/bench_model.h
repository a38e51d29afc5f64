// `kgtrain bench-model`: training-step images/s of the recipe's model or others on synthetic input
// (lib/jobs/bench_model.cpp).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "config/schema.h"
#include "session/session.h"

namespace kg::jobs {

// bench-model's flags, declared once in bench_model_flags() as recipe keys are (key, type, default, range, doc):
// app/flag_table.h makes them CLI11 options with --help and completion, run_bench_model checks them with the keys'
// own checks, and tests/jobs/test_flag_tables.cpp holds --help and docs/commands.md to the table.
struct BenchModelFlags {
  std::vector<std::string> models;                            // --models (empty = the recipe's model)
  int64_t size = 0;                                           // --size (0 = data.image_size)
  int64_t batch = 0;                                          // --batch (0 = train.batch_size)
  int64_t steps = 5;                                          // --steps
  int64_t warmup = 1;                                         // --warmup
  std::vector<std::string> layouts{"nchw", "channels_last"};  // --layouts
  bool grad_checkpointing = false;                            // --grad-checkpointing
  std::string json;                                           // --json ("" = none)
};
const config::Fields<BenchModelFlags>& bench_model_flags();

struct BenchModelRequest : session::Session {
  BenchModelFlags flags;
};

int run_bench_model(const BenchModelRequest& o);

}  // namespace kg::jobs
