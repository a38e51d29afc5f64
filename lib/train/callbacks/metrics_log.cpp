// The `metrics_log` callback: metrics.jsonl in the run (or fold) directory, one JSON object per
// completed epoch, rewritten atomically from the loop's history (so a resumed run never repeats or
// loses a line), and one human line per epoch in the log.
#include <cmath>
#include <filesystem>
#include <sstream>

#include "core/fs.h"
#include "core/strings.h"
#include "train/trainer.h"

namespace kg::train {
namespace {

class MetricsLog : public Callback {
 public:
  std::string name() const override { return "metrics_log"; }
  int order() const override { return 80; }
  void on_epoch_end(Trainer& t, EpochReport& r) override {
    std::string text;
    for (auto& line : t.state().history) text += line.dump() + "\n";
    write_file_atomic((std::filesystem::path(t.io().dir) / "metrics.jsonl").string(), text);
    std::string l = (t.io().label.empty() ? "" : t.io().label + " ") + "epoch " + std::to_string(r.epoch) + "/" +
                    std::to_string(t.plan().epochs()) + "  train_loss " +
                    format_significant(r.values["train_loss"], 4) + "  valid_loss " +
                    format_significant(r.values["valid_loss"], 4);
    for (auto& n : t.metrics().names()) l += "  " + n + " " + format_significant(r.values[n], 4);
    for (auto& v : r.variants) {
      auto it = v.values.find(t.metrics().monitor());
      if (it != v.values.end()) l += "  " + v.name + "_" + it->first + " " + format_significant(it->second, 4);
    }
    if (r.improved) l += " *" + (r.best_from == "model" ? std::string() : " (" + r.best_from + ")");
    l += "  " + format_significant(r.values["train_images_per_s"], 5) + " img/s  " +
         format_significant(r.values["epoch_seconds"], 3) + " s";
    t.log(l);
  }
};

KG_REGISTER(callback_registry(), "metrics_log",
            "metrics.jsonl (one line per epoch) and an epoch line in the log; always on", "[train]\nepochs = 5",
            config::Fields<config::NoOptions>(), [](const config::NoOptions&, const config::Recipe&) -> CallbackPtr {
              return std::make_unique<MetricsLog>();
            });

}  // namespace
}  // namespace kg::train
