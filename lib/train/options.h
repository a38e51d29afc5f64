// The `run`, `paths` and `train` recipe sections.
#pragma once
#include <string>

#include "config/tree.h"

namespace kg::train {

struct RunOptions {
  std::string name = "run";  ///< run name: outputs go to <paths.runs>/<name>/<UTC time>-<command>/
  int64_t seed = 42;         ///< seed for weights, splits, order and augmentation
};

struct PathsOptions {
  std::string data = "data";  ///< where datasets live (set by the environment layer)
  std::string runs = "runs";  ///< where run folders are created (set by the environment layer)
};

struct TrainOptions {
  int64_t epochs = 10;            ///< passes over the training rows
  int64_t batch_size = 64;        ///< images per optimizer update
  int64_t eval_batch_size = 0;    ///< images per evaluation batch (0 = 2 x batch_size)
  std::string metric = "accuracy";  ///< validation metric that selects checkpoints/best
  double log_every_s = 10.0;      ///< seconds between progress lines when output is not a terminal
};

RunOptions load_run_options(const config::Tree& recipe);
PathsOptions load_paths_options(const config::Tree& recipe);
TrainOptions load_train_options(const config::Tree& recipe);
int64_t eval_batch_size(const TrainOptions& o);

}  // namespace kg::train
