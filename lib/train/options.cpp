#include "train/options.h"

#include <cctype>

#include "config/sections.h"
#include "core/error.h"
#include "core/strings.h"

namespace kg::train {
namespace {

// Bounds far past any real run that keep counts of updates and images inside int64 arithmetic (a
// billion epochs planned epoch by epoch looked like a hang).
constexpr int64_t kMaxEpochs = 1000000;
constexpr int64_t kMaxBatch = int64_t{1} << 24;

config::Fields<RunOptions> run_fields() {
  config::Fields<RunOptions> f;
  f.field("name", &RunOptions::name, "run name: outputs go to paths.runs/<name>/<UTC time>-<command>/")
      .check([](const config::json& v) -> std::string {
        auto s = v.get<std::string>();
        if (s.empty() || s.find('/') != std::string::npos || s == "." || s == "..")
          return "expected a folder name without '/', got \"" + s + "\"";
        for (unsigned char c : s)
          if (c < 0x20 || c == 0x7F)
            return "expected a folder name without control characters (newline, tab, NUL, ...)";
        return "";
      });
  f.field("seed", &RunOptions::seed, "seed for weights, folds, data order and augmentation").min(0);
  f.field("time_limit", &RunOptions::time_limit,
          "wall-clock budget: epochs are planned to finish inside it (\"8h45m\", \"90m\"; \"\" = none)")
      .check([](const config::json& v) -> std::string {
        try {
          parse_duration(v.get<std::string>());
        } catch (const ConfigError& e) {
          // The problem without the key: the validator adds it, and where it was set.
          const std::string& p = e.problems().front();
          const std::string prefix = "run.time_limit = ";
          return starts_with(p, prefix) ? p.substr(prefix.size()) : p;
        } catch (const std::exception&) {  // std::stod on "." or a number past double's range
          return "\"" + v.get<std::string>() + "\": expected a duration such as \"8h45m\", \"90m\" or \"3600s\"";
        }
        return "";
      });
  return f;
}
config::Fields<PathsOptions> paths_fields() {
  config::Fields<PathsOptions> f;
  f.field("data", &PathsOptions::data, "datasets root (set by the environment layer: local, kaggle, colab)");
  f.field("runs", &PathsOptions::runs, "run folders root (set by the environment layer)");
  f.field("submission", &PathsOptions::submission,
          "tta-predict's submission file when --out is not given (\"\" = RUN_DIR/submission.csv; the kaggle layer "
          "sets /kaggle/working/submission.csv, the file a notebook submits; --smoke ignores it)");
  return f;
}
config::Fields<TrainOptions> train_fields() {
  config::Fields<TrainOptions> f;
  f.field("epochs", &TrainOptions::epochs, "passes over the training rows").range(1, kMaxEpochs);
  f.field("batch_size", &TrainOptions::batch_size_form,
          "images per micro-batch (effective batch = batch_size x accum_steps), or \"auto\": fit and lr-find try "
          "powers of two with a real training step and take the largest that fits with auto_batch_margin to spare");
  f.field("auto_batch_max", &TrainOptions::auto_batch_max, "batch_size = \"auto\": the largest batch size tried")
      .range(1, kMaxBatch);
  f.field("auto_batch_margin", &TrainOptions::auto_batch_margin,
          "batch_size = \"auto\": fraction of the device's memory that must stay free at the chosen size")
      .range(0, 0.9);
  f.field("eval_batch_size", &TrainOptions::eval_batch_size, "images per evaluation batch (0 = 2 x batch_size)")
      .range(0, kMaxBatch);
  f.field("log_every_s", &TrainOptions::log_every_s, "seconds between progress lines when not on a terminal")
      .positive();
  f.field("accum_steps", &TrainOptions::accum_steps,
          "micro-batches per optimizer update; the loss is divided by the group's real size")
      .range(1, kMaxBatch);
  f.field("clip_grad_norm", &TrainOptions::clip_grad_norm, "clip the global gradient L2 norm to this (0 = off)").min(0);
  f.field("clip_grad_value", &TrainOptions::clip_grad_value, "clamp each gradient element to +-this (0 = off)").min(0);
  f.field("agc", &TrainOptions::agc, "adaptive gradient clipping factor, unit-wise (NFNet; timm uses 0.01; 0 = off)")
      .min(0);
  f.field("oom_backoff", &TrainOptions::oom_backoff,
          "on a CUDA out-of-memory error: free the cache, halve the micro-batch and double the accumulation (effective "
          "batch, lr and schedule unchanged), retry the update; exit 4 at one image per micro-batch");
  f.field("checkpoint_every_steps", &TrainOptions::checkpoint_every_steps,
          "also save checkpoints/last every N optimizer updates inside an epoch (0 = epoch ends only)")
      .min(0);
  f.field(
       "nan_policy", &TrainOptions::nan_policy,
       "non-finite loss or gradient: the update is skipped and logged; abort stops after nan_max_consecutive in a row")
      .choices({"abort", "skip"});
  f.field("nan_max_consecutive", &TrainOptions::nan_max_consecutive,
          "consecutive non-finite updates before nan_policy = abort stops (exit 5)")
      .min(1);
  f.field("mode", &TrainOptions::mode,
          "normal, or fine_tune (fastai: freeze_epochs on the head, then train.epochs on all groups)")
      .choices({"normal", "fine_tune"});
  f.field("freeze", &TrainOptions::freeze,
          "train only the last N layer groups (0 = all); see kgtrain show --model for the groups")
      .min(0);
  f.field("unfreeze_every", &TrainOptions::unfreeze_every,
          "gradual unfreezing: one more layer group every N epochs (0 = never)")
      .min(0);
  f.field("train_bn", &TrainOptions::train_bn,
          "normalization layers stay trainable inside frozen groups (fastai train_bn)");
  f.field("freeze_epochs", &TrainOptions::freeze_epochs,
          "fine_tune: epochs with only the head trainable, before train.epochs on all groups")
      .range(0, kMaxEpochs);
  f.field("fine_tune_lr_mult", &TrainOptions::fine_tune_lr_mult,
          "fine_tune: the stem's lr is the head's divided by this (fastai lr_mult)")
      .min(1);
  f.field("fine_tune_pct_start", &TrainOptions::fine_tune_pct_start,
          "fine_tune: warm-up fraction of the unfrozen phase")
      .range(0, 1);
  f.field("fine_tune_div", &TrainOptions::fine_tune_div, "fine_tune: the unfrozen phase starts at lr / div").positive();
  f.field("adversarial.kind", &TrainOptions::adv_kind,
          "adversarial training, one more forward and backward per micro-batch on perturbed weights: fgm (the word "
          "embeddings moved along their gradient, Feedback Prize 2021) or awp (adversarial weight perturbation, as "
          "the public Kaggle AWP class: NBME, Feedback-ELL); none = off")
      .choices({"none", "fgm", "awp"});
  f.field("adversarial.start_epoch", &TrainOptions::adv_start_epoch,
          "adversarial training from this epoch on (0-based: 0 = from the start, 1 = after the first epoch)")
      .min(0);
  f.field("adversarial.eps", &TrainOptions::adv_eps,
          "fgm: the perturbation's norm (epsilon; 0 = 1.0); awp: each weight stays within +-eps x |weight| "
          "(adv_eps; 0 = 0.2)")
      .min(0);
  f.field("adversarial.lr", &TrainOptions::adv_lr,
          "awp: the step along the normalized gradient, relative to the weight's norm (adv_lr)")
      .min(0);
  f.field("adversarial.param", &TrainOptions::adv_param,
          "awp: parameters whose name contains this are perturbed (adv_param)");
  f.field("adversarial.emb_name", &TrainOptions::adv_emb_name,
          "fgm: parameters whose name contains this are perturbed (the word embeddings)");
  return f;
}
config::Fields<CheckpointOptions> checkpoint_fields() {
  config::Fields<CheckpointOptions> f;
  f.field("keep_last", &CheckpointOptions::keep_last,
          "checkpoints/last plus keep_last-1 older ones rotated to checkpoints/step-NNN")
      .min(1);
  f.field("top_k", &CheckpointOptions::top_k, "also keep the k best epochs as checkpoints/top-epochNNN (0 = off)")
      .min(0);
  return f;
}

KG_REGISTER_SECTION("run", "run identity and seed", run_fields().schema(), "");
KG_REGISTER_SECTION("paths", "input and output roots (the environment layer sets them)", paths_fields().schema(), "");
KG_REGISTER_SECTION("train", "the training loop", train_fields().schema(), "");
KG_REGISTER_SECTION("checkpoint", "checkpoint retention (last, rotated history, top-k)", checkpoint_fields().schema(),
                    "");

}  // namespace

RunOptions RunOptions::load(const config::Tree& r) { return run_fields().load(config::Options(&r, "run")); }
PathsOptions PathsOptions::load(const config::Tree& r) { return paths_fields().load(config::Options(&r, "paths")); }
std::string BatchSize::check(const config::json& v) {
  if (v.is_string() && v.get<std::string>() == "auto") return "";
  if (v.is_number_integer() && v.get<int64_t>() >= 1 && v.get<int64_t>() <= kMaxBatch) return "";
  return "expected an integer in [1, " + std::to_string(kMaxBatch) + "] or \"auto\", got " + v.dump();
}
void from_json(const config::json& j, BatchSize& b) {
  if (j.is_string())
    b.form = BatchSize::Auto{};
  else
    b.form = j.get<int64_t>();
}
void to_json(config::json& j, const BatchSize& b) {
  j = b.is_auto() ? config::json("auto") : config::json(std::get<int64_t>(b.form));
}

TrainOptions TrainOptions::load(const config::Tree& r) {
  TrainOptions t = train_fields().load(config::Options(&r, "train"));
  t.batch_size = t.batch_size_form.is_auto() ? 0 : std::get<int64_t>(t.batch_size_form.form);
  return t;
}
bool batch_size_is_auto(const config::Recipe& r) { return r.get<TrainOptions>().batch_size_form.is_auto(); }
CheckpointOptions CheckpointOptions::load(const config::Tree& r) {
  return checkpoint_fields().load(config::Options(&r, "checkpoint"));
}

double parse_duration(const std::string& text, const std::string& key) {
  if (trim(text).empty()) return 0;
  // "8h45m", "90m", "3600s", "1.5h", "3600": numbers with optional d/h/m/s units, summed.
  double total = 0;
  size_t i = 0;
  const std::string s = trim(text);
  bool any = false;
  while (i < s.size()) {
    size_t j = i;
    while (j < s.size() && (std::isdigit(static_cast<unsigned char>(s[j])) || s[j] == '.')) ++j;
    KG_CHECK(j > i, ConfigError, key, " = \"", text, "\": expected a duration such as \"8h45m\", \"90m\" or \"3600s\"");
    double v = std::stod(s.substr(i, j - i));
    double unit = 1;
    if (j < s.size()) {
      switch (s[j]) {
        case 'd':
          unit = 86400;
          break;
        case 'h':
          unit = 3600;
          break;
        case 'm':
          unit = 60;
          break;
        case 's':
          unit = 1;
          break;
        default:
          throw ConfigError(key + " = \"" + text + "\": unknown unit '" + std::string(1, s[j]) +
                            "' (use d, h, m, s, e.g. \"8h45m\")");
      }
      ++j;
    }
    total += v * unit;
    any = true;
    i = j;
  }
  KG_CHECK(any && total > 0, ConfigError, key, " = \"", text, "\": the duration must be positive");
  return total;
}
int64_t eval_batch_size(const TrainOptions& o) {
  if (o.eval_batch_size > 0) return o.eval_batch_size;
  return o.batch_size > 0 ? 2 * o.batch_size : 128;
}

}  // namespace kg::train
