// The `early_stopping` callback (Lightning EarlyStopping): stop when the monitored value has not
// improved by min_delta for `patience` epochs, or at once when it is not finite (check_finite).
#include <cmath>

#include "config/sections.h"
#include "core/error.h"
#include "train/trainer.h"

namespace kg::train {
namespace {

// Recipe section [early_stopping]; each field's doc is in early_stopping_fields() below and docs/reference.md.
struct EarlyStoppingOptions {
  bool enabled = false;
  std::string monitor;
  int64_t patience = 3;
  double min_delta = 0.0;
  std::string mode = "auto";
  bool check_finite = true;
};

config::Fields<EarlyStoppingOptions> early_stopping_fields() {
  config::Fields<EarlyStoppingOptions> f;
  f.field("enabled", &EarlyStoppingOptions::enabled, "stop when the monitored value stops improving");
  f.field("monitor", &EarlyStoppingOptions::monitor,
          "value to watch (\"\" = metric.monitor; e.g. valid_loss, ema_accuracy)");
  f.field("patience", &EarlyStoppingOptions::patience, "epochs without improvement before stopping").min(1);
  f.field("min_delta", &EarlyStoppingOptions::min_delta, "smallest change counted as an improvement").min(0);
  f.field("mode", &EarlyStoppingOptions::mode, "auto (the monitor's direction), max or min")
      .choices({"auto", "max", "min"});
  f.field("check_finite", &EarlyStoppingOptions::check_finite, "stop at once when the monitored value is not finite");
  return f;
}
KG_REGISTER_SECTION("early_stopping", "stop when the monitored value stops improving (Lightning EarlyStopping)",
                    early_stopping_fields().schema(), "");

bool higher_is_better_name(const std::string& n) {
  std::string base = n.rfind("ema_", 0) == 0 ? n.substr(4) : n.rfind("swa_", 0) == 0 ? n.substr(4) : n;
  return !(base.find("loss") != std::string::npos || base == "rmse" || base == "mae" || base == "smape");
}

class EarlyStopping : public Callback {
 public:
  explicit EarlyStopping(EarlyStoppingOptions o) : o_(std::move(o)) {}
  std::string name() const override { return "early_stopping"; }
  int order() const override { return 50; }
  void on_fit_start(Trainer& t) override {
    if (o_.monitor.empty()) o_.monitor = t.metrics().monitor();
    if (o_.mode == "auto") {
      bool is_metric_monitor = o_.monitor == t.metrics().monitor();
      higher_ = is_metric_monitor ? t.metrics().higher_is_better() : higher_is_better_name(o_.monitor);
    } else {
      higher_ = o_.mode == "max";
    }
  }
  void on_epoch_end(Trainer& t, EpochReport& r) override {
    auto it = r.values.find(o_.monitor);
    if (it == r.values.end()) {
      std::string known;
      for (auto& [k, v] : r.values) known += (known.empty() ? "" : ", ") + k;
      throw ConfigError("early_stopping.monitor = \"" + o_.monitor + "\" is not computed; this run has: " + known);
    }
    double v = it->second;
    if (!std::isfinite(v)) {
      if (o_.check_finite)
        t.request_stop("early_stopping: " + o_.monitor + " is not finite at epoch " + std::to_string(r.epoch));
      return;
    }
    bool improved = !has_best_ || (higher_ ? v > best_ + o_.min_delta : v < best_ - o_.min_delta);
    if (improved) {
      best_ = v;
      has_best_ = true;
      bad_ = 0;
      return;
    }
    if (++bad_ >= o_.patience)
      t.request_stop("early_stopping: " + o_.monitor + " did not improve on " + std::to_string(best_) + " for " +
                     std::to_string(bad_) + " epochs");
  }
  void save_state(model::TensorMap&, nlohmann::json& s) const override {
    s = {{"best", has_best_ ? nlohmann::json(best_) : nlohmann::json()}, {"bad", bad_}};
  }
  void load_state(const model::TensorMap&, const nlohmann::json& s) override {
    if (s.contains("best") && !s["best"].is_null()) {
      best_ = s["best"].get<double>();
      has_best_ = true;
    }
    bad_ = s.value("bad", int64_t{0});
  }

 private:
  EarlyStoppingOptions o_;
  bool higher_ = true, has_best_ = false;
  double best_ = 0;
  int64_t bad_ = 0;
};

KG_REGISTER(callback_registry(), "early_stopping",
            "stop when the monitored value stops improving (keys in [early_stopping])",
            "[early_stopping]\nenabled = true\npatience = 3", config::Fields<config::NoOptions>(),
            [](const config::NoOptions&, const config::Recipe& recipe) -> CallbackPtr {
              auto o = early_stopping_fields().load(recipe.section("early_stopping"));
              return o.enabled ? std::make_unique<EarlyStopping>(o) : nullptr;
            });

}  // namespace
}  // namespace kg::train
