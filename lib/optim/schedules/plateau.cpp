// Reduce on plateau = PyTorch ReduceLROnPlateau stepped once per epoch with the monitored value: after more
// than `patience` epochs without improvement the lr is multiplied by factor (not below min_lr), then
// `cooldown` epochs pass before counting again. A change applies from the update after the observation.
#include <algorithm>
#include <cmath>
#include <limits>

#include "core/error.h"
#include "core/strings.h"
#include "optim/schedule.h"

namespace kg::optim {
namespace {

// Keys of [schedule] when name = "plateau"; each field's doc is in plateau_fields() below and docs/reference.md.
struct PlateauOptions {
  std::string monitor = "valid_loss";
  std::string mode = "auto";
  int64_t patience = 2;
  double factor = 0.1;
  double threshold = 1e-4;
  std::string threshold_mode = "rel";
  int64_t cooldown = 0;
  double min_lr = 0.0;
};

// mode = "auto": metrics where higher is better; anything else (losses, errors) is minimised.
bool higher_is_better(std::string name) {
  for (const char* p : {"valid_", "val_", "train_"})
    if (starts_with(name, p)) name = name.substr(std::string(p).size());
  for (const char* m : {"accuracy", "acc", "auc", "roc_auc", "f1", "qwk", "kappa", "r2", "top_", "dice", "iou"})
    if (starts_with(name, m)) return true;
  return false;
}

class PlateauSchedule : public Schedule {
 public:
  PlateauSchedule(const PlateauOptions& o, const ScheduleContext& c) : o_(o), lr0_(c.lr), lr_(c.lr) {
    maximize_ = o.mode == "max" || (o.mode == "auto" && higher_is_better(o.monitor));
    best_ = worst();
  }

  double lr_at(int64_t step) const override {
    auto it = std::upper_bound(history_.begin(), history_.end(), step,
                               [](int64_t s, const std::pair<int64_t, double>& h) { return s < h.first; });
    return it == history_.begin() ? lr0_ : std::prev(it)->second;
  }

  void observe(int64_t step, const std::map<std::string, double>& values) override {
    auto v = values.find(o_.monitor);
    if (v == values.end()) {
      std::vector<std::string> names;
      for (auto& [k, x] : values) names.push_back(k);
      throw ConfigError("schedule.monitor: \"" + o_.monitor + "\" is not among this run's epoch values (available: " +
                        join(names, ", ") + ")" + did_you_mean(o_.monitor, names));
    }
    const double current = v->second;
    ++epochs_;
    if (better(current)) {
      best_ = current;
      bad_ = 0;
    } else {
      ++bad_;
    }
    if (cooldown_ > 0) {
      --cooldown_;
      bad_ = 0;
    }
    if (bad_ > o_.patience) {
      const double next = std::max(lr_ * o_.factor, o_.min_lr);
      if (lr_ - next > 1e-8) {  // ReduceLROnPlateau's eps: ignore changes too small to matter
        lr_ = next;
        while (!history_.empty() && history_.back().first >= step) history_.pop_back();
        history_.emplace_back(step, lr_);
      }
      cooldown_ = o_.cooldown;
      bad_ = 0;
    }
  }

  nlohmann::json state() const override {
    nlohmann::json h = nlohmann::json::array();
    for (auto& [s, lr] : history_) h.push_back({s, lr});
    return {{"lr", lr_},
            {"best", std::isfinite(best_) ? nlohmann::json(best_) : nlohmann::json()},
            {"num_bad_epochs", bad_},
            {"cooldown_counter", cooldown_},
            {"epochs", epochs_},
            {"history", h}};
  }
  void load_state(const nlohmann::json& s) override {
    try {
      lr_ = s.at("lr").get<double>();
      best_ = s.at("best").is_null() ? worst() : s.at("best").get<double>();
      bad_ = s.at("num_bad_epochs").get<int64_t>();
      cooldown_ = s.at("cooldown_counter").get<int64_t>();
      epochs_ = s.at("epochs").get<int64_t>();
      history_.clear();
      for (auto& h : s.at("history")) history_.emplace_back(h.at(0).get<int64_t>(), h.at(1).get<double>());
    } catch (const nlohmann::json::exception& e) {
      throw CheckpointError(std::string("plateau schedule state is damaged: ") + e.what() + " (state: " + s.dump() +
                            ")");
    }
  }

 private:
  double worst() const {
    return maximize_ ? -std::numeric_limits<double>::infinity() : std::numeric_limits<double>::infinity();
  }
  bool better(double a) const {  // ReduceLROnPlateau.is_better (NaN is never better)
    const bool rel = o_.threshold_mode == "rel";
    if (maximize_) return rel ? a > best_ * (1.0 + o_.threshold) : a > best_ + o_.threshold;
    return rel ? a < best_ * (1.0 - o_.threshold) : a < best_ - o_.threshold;
  }

  PlateauOptions o_;
  bool maximize_ = false;
  double lr0_, lr_, best_ = 0;
  int64_t bad_ = 0, cooldown_ = 0, epochs_ = 0;
  std::vector<std::pair<int64_t, double>> history_;  // (first update, lr) of every reduction
};

config::Fields<PlateauOptions> plateau_fields() {
  config::Fields<PlateauOptions> f;
  f.field("monitor", &PlateauOptions::monitor, "the epoch value watched: valid_loss, train_loss or a metric name");
  f.field("mode", &PlateauOptions::mode,
          "min or max the monitor; auto = max for accuracy/auc/f1/qwk/r2/top_k, else min")
      .choices({"auto", "min", "max"});
  f.field("patience", &PlateauOptions::patience, "epochs without improvement tolerated before reducing the lr").min(0);
  f.field("factor", &PlateauOptions::factor, "lr factor at each reduction, in (0, 1)")
      .positive()
      .check([](const config::json& v) {
        return v.get<double>() < 1.0 ? std::string() : "expected a number in (0, 1), got " + v.dump();
      });
  f.field("threshold", &PlateauOptions::threshold, "smallest change that counts as an improvement").min(0);
  f.field("threshold_mode", &PlateauOptions::threshold_mode, "threshold relative to the best value or absolute")
      .choices({"rel", "abs"});
  f.field("cooldown", &PlateauOptions::cooldown, "epochs after a reduction before bad epochs count again").min(0);
  f.field("min_lr", &PlateauOptions::min_lr, "the lr never goes below this").min(0);
  return f;
}

KG_REGISTER(schedule_registry(), "plateau", "reduce the lr when a monitored value stops improving (ReduceLROnPlateau)",
            "[schedule]\nname = \"plateau\"\nmonitor = \"valid_loss\"\npatience = 2\nfactor = 0.1", plateau_fields(),
            [](const PlateauOptions& o, const ScheduleContext& c) -> SchedulePtr {
              return std::make_unique<PlateauSchedule>(o, c);
            });

}  // namespace
}  // namespace kg::optim
