#include "train/options.h"

#include "config/sections.h"

namespace kg::train {
namespace {

config::Fields<RunOptions> run_fields() {
  config::Fields<RunOptions> f;
  f.field("name", &RunOptions::name, "run name (folder under paths.runs)").check([](const config::json& v) -> std::string {
    auto s = v.get<std::string>();
    if (s.empty() || s.find('/') != std::string::npos || s == "." || s == "..") return "expected a folder name without '/', got \"" + s + "\"";
    return "";
  });
  f.field("seed", &RunOptions::seed, "seed for weights, folds, data order and augmentation").min(0);
  return f;
}
config::Fields<PathsOptions> paths_fields() {
  config::Fields<PathsOptions> f;
  f.field("data", &PathsOptions::data, "datasets root (set by the environment layer: local, kaggle, colab)");
  f.field("runs", &PathsOptions::runs, "run folders root (set by the environment layer)");
  return f;
}
config::Fields<TrainOptions> train_fields() {
  config::Fields<TrainOptions> f;
  f.field("epochs", &TrainOptions::epochs, "passes over the training rows").min(1);
  f.field("batch_size", &TrainOptions::batch_size, "images per optimizer update").min(1);
  f.field("eval_batch_size", &TrainOptions::eval_batch_size, "images per evaluation batch (0 = 2 x batch_size)").min(0);
  f.field("metric", &TrainOptions::metric, "validation metric that selects checkpoints/best").kind("metric");
  f.field("log_every_s", &TrainOptions::log_every_s, "seconds between progress lines when not on a terminal").positive();
  return f;
}

KG_REGISTER_SECTION("run", "run identity and seed", run_fields().schema(), "");
KG_REGISTER_SECTION("paths", "input and output roots (the environment layer sets them)", paths_fields().schema(), "");
KG_REGISTER_SECTION("train", "the training loop", train_fields().schema(), "");

}  // namespace

RunOptions load_run_options(const config::Tree& r) { return run_fields().load(config::Options(&r, "run")); }
PathsOptions load_paths_options(const config::Tree& r) { return paths_fields().load(config::Options(&r, "paths")); }
TrainOptions load_train_options(const config::Tree& r) { return train_fields().load(config::Options(&r, "train")); }
int64_t eval_batch_size(const TrainOptions& o) { return o.eval_batch_size > 0 ? o.eval_batch_size : 2 * o.batch_size; }

}  // namespace kg::train
