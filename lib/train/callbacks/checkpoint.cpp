// The `checkpoint` callback: at every epoch end, checkpoints/last (previous one rotated), best when
// the monitored value improved (holding the weights that won: the model's or a variant's such as EMA),
// and the top-k epochs. Retention keys are in [checkpoint]; mid-epoch saves are the loop's.
#include "train/trainer.h"

namespace kg::train {
namespace {

class CheckpointCallback : public Callback {
 public:
  std::string name() const override { return "checkpoint"; }
  int order() const override { return 90; }
  void on_epoch_end(Trainer& t, EpochReport& r) override {
    auto files = t.checkpoint_files();
    // best and top-k before last: a kill between the saves must not leave a "last" whose state
    // names a best epoch that checkpoints/best does not hold.
    const model::TensorMap* winner = nullptr;
    for (auto& v : r.variants)
      if (r.improved && v.name == r.best_from) winner = v.weights;
    if (r.improved) {
      if (winner) {
        auto best = files;
        best.model = *winner;
        best.state["weights"] = r.best_from;  // not the model's: find_latest resumes from it no run
        t.store().save_best(best);
      } else {
        t.store().save_best(files);
      }
    }
    auto it = r.values.find(t.metrics().monitor());
    if (it != r.values.end()) t.store().offer_top_k(files, it->second, r.epoch);
    t.store().save_last(files);
  }
};

KG_REGISTER(
    callback_registry(), "checkpoint",
    "checkpoints/last every epoch (older ones rotated), checkpoints/best, top-k (keys in [checkpoint]); always on",
    "[checkpoint]\nkeep_last = 3\ntop_k = 2", config::Fields<config::NoOptions>(),
    [](const config::NoOptions&, const config::Recipe&) -> CallbackPtr {
      return std::make_unique<CheckpointCallback>();
    });

}  // namespace
}  // namespace kg::train
