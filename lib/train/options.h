// The `run`, `paths` and `train` recipe sections.
#pragma once
#include <string>

#include "config/tree.h"

namespace kg::train {

struct RunOptions {
  std::string name = "run";  ///< run name: outputs go to <paths.runs>/<name>/<UTC time>-<command>/
  int64_t seed = 42;         ///< seed for weights, splits, order and augmentation
  std::string time_limit;    ///< wall-clock budget ("8h45m", "90m", "3600s"; "" = none)
};

// run.time_limit in seconds (0 = none); ConfigError for text that is not a duration.
double parse_duration(const std::string& text, const std::string& key = "run.time_limit");

struct PathsOptions {
  std::string data = "data";  ///< where datasets live (set by the environment layer)
  std::string runs = "runs";  ///< where run folders are created (set by the environment layer)
};

struct TrainOptions {
  int64_t epochs = 10;               ///< passes over the training rows
  config::json batch_size_key = 64;  ///< (recipe key batch_size) images per micro-batch, or "auto"
  int64_t batch_size = 64;        // batch_size_key as a number; 0 while it is "auto" (fit and lr-find resolve it first)
  int64_t auto_batch_max = 1024;  ///< batch_size = "auto": the largest size tried
  double auto_batch_margin = 0.1;  ///< batch_size = "auto": fraction of device memory left free at the chosen size
  int64_t eval_batch_size = 0;     ///< images per evaluation batch (0 = 2 x batch_size)
  double log_every_s = 10.0;       ///< seconds between progress lines when output is not a terminal
  int64_t accum_steps = 1;         ///< micro-batches per optimizer update (effective batch = batch_size x accum_steps)
  double clip_grad_norm = 0;       ///< clip the global gradient L2 norm to this (0 = off)
  double clip_grad_value = 0;      ///< clamp every gradient element to +-this (0 = off)
  double agc = 0;                  ///< adaptive gradient clipping factor (NFNet/timm, e.g. 0.01; 0 = off)
  bool oom_backoff =
      true;  ///< CUDA out of memory: halve the micro-batch, double accumulation (same effective batch), retry
  int64_t checkpoint_every_steps =
      0;  ///< also save checkpoints/last every N optimizer updates inside an epoch (0 = off)
  std::string nan_policy =
      "abort";  ///< non-finite loss/gradient: skip the update; abort also stops after nan_max_consecutive
  int64_t nan_max_consecutive = 3;   ///< consecutive skipped updates before nan_policy = "abort" stops the run
  std::string mode = "normal";       ///< normal | fine_tune (fastai fine_tune: frozen body first, then all groups)
  int64_t freeze = 0;                ///< freeze every layer group but the last N (0 = train all)
  int64_t unfreeze_every = 0;        ///< gradual unfreezing: one more group every N epochs (0 = never)
  bool train_bn = true;              ///< normalization layers stay trainable inside frozen groups (fastai)
  int64_t freeze_epochs = 1;         ///< fine_tune: epochs with the body frozen (before train.epochs unfrozen ones)
  double fine_tune_lr_mult = 100;    ///< fine_tune: the stem's lr is the head's / this (fastai lr_mult)
  double fine_tune_pct_start = 0.3;  ///< fine_tune: warm-up fraction of the unfrozen phase
  double fine_tune_div = 5;          ///< fine_tune: the unfrozen phase starts at lr / this
};

struct CheckpointOptions {
  int64_t keep_last = 2;  ///< checkpoints/last plus this-1 rotated older ones (step-NNN)
  int64_t top_k = 0;      ///< also keep the k best epochs as checkpoints/top-epochNNN (0 = off)
};

RunOptions load_run_options(const config::Tree& recipe);
PathsOptions load_paths_options(const config::Tree& recipe);
TrainOptions load_train_options(const config::Tree& recipe);
CheckpointOptions load_checkpoint_options(const config::Tree& recipe);
// train.eval_batch_size, else 2 x batch_size (128 while batch_size is an unresolved "auto").
int64_t eval_batch_size(const TrainOptions& o);
// train.batch_size = "auto" in `recipe`.
bool batch_size_is_auto(const config::Tree& recipe);

}  // namespace kg::train
