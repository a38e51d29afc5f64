// The `plots` callback: loss.png (train and validation loss per epoch), metrics.png (every metric,
// with EMA/SWA variants), lr.png (learning rate per optimizer update over the whole plan) in the run
// (or fold) directory, redrawn after every epoch so a notebook can show them while training runs.
#include <filesystem>

#include "config/sections.h"
#include "report/plot.h"
#include "train/trainer.h"

namespace kg::train {
namespace {

// Recipe section [plots]; each field's doc is in plots_fields() below and docs/reference.md.
struct PlotsOptions {
  bool enabled = true;
};
config::Fields<PlotsOptions> plots_fields() {
  config::Fields<PlotsOptions> f;
  f.field("enabled", &PlotsOptions::enabled,
          "draw loss.png, metrics.png and lr.png in the run directory after every epoch");
  return f;
}
KG_REGISTER_SECTION("plots", "training curves as PNG files in the run directory", plots_fields().schema(), "");

class Plots : public Callback {
 public:
  std::string name() const override { return "plots"; }
  int order() const override { return 85; }
  void on_fit_start(Trainer& t) override {
    if (!report::can_plot())
      t.log(
          "  plots: no loss.png / metrics.png / lr.png: this kgtrain was built without OpenCV, which draws them "
          "(metrics.jsonl has every number; set plots.enabled = false to silence this)");
  }
  void on_epoch_end(Trainer& t, EpochReport&) override {
    if (!report::can_plot()) return;
    namespace fs = std::filesystem;
    const auto& h = t.state().history;
    auto series = [&](const std::string& key) {
      report::Series s{key, {}, {}, h.size() < 30};
      for (auto& line : h)
        if (line.contains(key) && line[key].is_number()) {
          s.x.push_back(line["epoch"].get<double>());
          s.y.push_back(line[key].get<double>());
        }
      return s;
    };
    const fs::path dir(t.io().dir);
    report::line_plot((dir / "loss.png").string(), {series("train_loss"), series("valid_loss")},
                      {"loss" + (t.io().label.empty() ? "" : " (" + t.io().label + ")"), "epoch", "loss"});
    std::vector<report::Series> ms;
    for (auto& n : t.metrics().names()) {
      ms.push_back(series(n));
      for (const char* v : {"ema_", "swa_"})
        if (!h.empty() && h.back().contains(v + n)) ms.push_back(series(v + n));
    }
    report::line_plot((dir / "metrics.png").string(), ms, {"validation metrics", "epoch", "value"});
    report::Series lr{"lr", {}, {}, false};
    const int64_t total = t.plan().total_steps();
    const int64_t every = std::max<int64_t>(1, total / 2000);
    const double spe = static_cast<double>(std::max<int64_t>(1, t.plan().steps_in_epoch(0)));
    for (int64_t s = 0; s < total; s += every) {
      lr.x.push_back(static_cast<double>(s) / spe);
      lr.y.push_back(t.plan().lr_at(s));
    }
    report::line_plot((dir / "lr.png").string(), {lr}, {"learning rate (per update)", "epoch", "lr"});
  }
};

KG_REGISTER(callback_registry(), "plots",
            "loss, metric and learning-rate curves as PNG in the run directory (keys in [plots])",
            "[plots]\nenabled = true", config::Fields<config::NoOptions>(),
            [](const config::NoOptions&, const config::Recipe& recipe) -> CallbackPtr {
              return plots_fields().load(recipe.section("plots")).enabled ? std::make_unique<Plots>() : nullptr;
            });

}  // namespace
}  // namespace kg::train
