#include "train/log_options.h"

#include <algorithm>

#include "config/sections.h"

namespace kg::train {
namespace {

const std::vector<std::string> kLoggers{"jsonl", "csv", "tensorboard"};

config::Fields<LogOptions> log_fields() {
  config::Fields<LogOptions> f;
  f.field("loggers", &LogOptions::loggers,
          "what records the run's numbers: \"jsonl\" (metrics.jsonl, always on: resume, sweeps and interpret read "
          "it), \"csv\" (metrics.csv, one row per epoch), \"tensorboard\" (event files in the run or fold folder: "
          "scalars per update and per epoch, hparams, a sample image grid)")
      .check([](const config::json& v) -> std::string {
        bool jsonl = false;
        for (auto& x : v) {
          const auto s = x.get<std::string>();
          if (std::find(kLoggers.begin(), kLoggers.end(), s) == kLoggers.end())
            return "unknown logger \"" + s + "\"; expected any of \"jsonl\", \"csv\", \"tensorboard\"";
          jsonl = jsonl || s == "jsonl";
        }
        if (!jsonl)
          return "\"jsonl\" must stay in the list: metrics.jsonl is the run's record (resume, sweeps and interpret "
                 "read it)";
        return "";
      });
  f.field("every_n_steps", &LogOptions::every_n_steps,
          "per-update scalars (loss, lr, grad norm, images/s) every this many optimizer updates (tensorboard)")
      .min(1);
  f.field("images", &LogOptions::images,
          "tensorboard: an image of the first training batch after augmentation (kgtrain show-batch's grid)");
  return f;
}

KG_REGISTER_SECTION("log", "loggers: metrics.jsonl, metrics.csv, TensorBoard event files", log_fields().schema(), "");

}  // namespace

LogOptions LogOptions::load(const config::Tree& r) { return log_fields().load(config::Options(&r, "log")); }

bool has_logger(const LogOptions& o, const std::string& name) {
  return std::find(o.loggers.begin(), o.loggers.end(), name) != o.loggers.end();
}

}  // namespace kg::train
