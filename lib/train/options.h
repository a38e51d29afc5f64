// The `run`, `paths` and `train` recipe sections.
#pragma once
#include <string>
#include <variant>

#include "config/recipe.h"

namespace kg::train {

// Recipe section [run]; each field's doc is in run_fields() (train/options.cpp) and docs/reference.md.
struct RunOptions {
  static RunOptions load(const config::Tree& recipe);  // recipe.get<RunOptions>() decodes it once
  std::string name = "run";
  int64_t seed = 42;
  std::string time_limit;
};

// run.time_limit in seconds (0 = none); ConfigError for text that is not a duration.
double parse_duration(const std::string& text, const std::string& key = "run.time_limit");

// Recipe section [paths]; each field's doc is in paths_fields() (train/options.cpp) and docs/reference.md.
struct PathsOptions {
  static PathsOptions load(const config::Tree& recipe);  // recipe.get<PathsOptions>() decodes it once
  std::string data = "data";
  std::string runs = "runs";
  std::string submission;
};

// train.batch_size, a key of two forms: a number, or "auto", which fit, lr-find and bench resolve with real
// training steps before anything else reads it (session/auto_batch.h, Recipe::resolved).
struct BatchSize {
  struct Auto {};
  static constexpr config::Type kRecipeType = config::Type::Any;
  static std::string check(const config::json& v);  // "" for a valid form, else "expected ..."
  BatchSize(int64_t n = 64) : form(n) {}            // NOLINT(google-explicit-constructor): a number is a size
  std::variant<int64_t, Auto> form;
  bool is_auto() const { return std::holds_alternative<Auto>(form); }
};
void from_json(const config::json& j, BatchSize& b);
void to_json(config::json& j, const BatchSize& b);

// Recipe section [train]; each field's doc is in train_fields() (train/options.cpp) and docs/reference.md.
struct TrainOptions {
  static TrainOptions load(const config::Tree& recipe);  // recipe.get<TrainOptions>() decodes it once
  int64_t epochs = 10;
  BatchSize batch_size_form = 64;  // recipe key batch_size
  int64_t batch_size = 64;  // batch_size_form as a number; 0 while it is "auto" (fit and lr-find resolve it first)
  int64_t auto_batch_max = 1024;
  double auto_batch_margin = 0.1;
  int64_t eval_batch_size = 0;
  double log_every_s = 10.0;
  int64_t accum_steps = 1;
  double clip_grad_norm = 0;
  double clip_grad_value = 0;
  double agc = 0;
  bool oom_backoff = true;
  int64_t checkpoint_every_steps = 0;
  std::string nan_policy = "abort";
  int64_t nan_max_consecutive = 3;
  std::string mode = "normal";
  int64_t freeze = 0;
  int64_t unfreeze_every = 0;
  bool train_bn = true;
  int64_t freeze_epochs = 1;
  double fine_tune_lr_mult = 100;
  double fine_tune_pct_start = 0.3;
  double fine_tune_div = 5;
  // train.adversarial.* (train/adversarial.h): kind, start_epoch, eps, lr, param, emb_name
  std::string adv_kind = "none";
  int64_t adv_start_epoch = 0;
  double adv_eps = 0;
  double adv_lr = 1.0;
  std::string adv_param = "weight";
  std::string adv_emb_name = "word_embeddings";
};

// Recipe section [checkpoint]; each field's doc is in checkpoint_fields() (train/options.cpp) and docs/reference.md.
struct CheckpointOptions {
  static CheckpointOptions load(const config::Tree& recipe);  // recipe.get<CheckpointOptions>() decodes it once
  int64_t keep_last = 2;
  int64_t top_k = 0;
};

// train.eval_batch_size, else 2 x batch_size (128 while batch_size is an unresolved "auto").
int64_t eval_batch_size(const TrainOptions& o);
// train.batch_size = "auto" in `recipe`.
bool batch_size_is_auto(const config::Recipe& recipe);

}  // namespace kg::train
