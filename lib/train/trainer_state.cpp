// TrainState <-> state.json "trainer": where the loop stands, in every checkpoint.
#include "train/trainer_state.h"

#include "core/error.h"

using nlohmann::json;

namespace kg::train {

json TrainState::to_json() const {
  return {{"epoch", epoch},
          {"batch", batch},
          {"step", step},
          {"skipped_updates", skipped_updates},
          {"nan_streak", nan_streak},
          {"epoch_loss_sum", epoch_loss_sum},
          {"epoch_loss_count", epoch_loss_count},
          {"epoch_samples", epoch_samples},
          {"epoch_seconds", epoch_seconds},
          {"train_images", train_images},
          {"train_seconds", train_seconds},
          {"elapsed_seconds", elapsed_seconds},
          {"best", best ? json(*best) : json()},
          {"best_epoch", best_epoch},
          {"best_from", best_from},
          {"history", history},
          {"stop_reason", stop_reason},
          {"oom_halvings", oom_halvings},
          {"oom_events", oom_events},
          {"world_size", world_size}};
}

TrainState TrainState::from_json(const json& j) {
  TrainState s;
  try {
    s.epoch = j.at("epoch").get<int64_t>();
    s.batch = j.at("batch").get<int64_t>();
    s.step = j.at("step").get<int64_t>();
    s.skipped_updates = j.at("skipped_updates").get<int64_t>();
    s.nan_streak = j.at("nan_streak").get<int64_t>();
    s.epoch_loss_sum = j.at("epoch_loss_sum").get<double>();
    s.epoch_loss_count = j.at("epoch_loss_count").get<int64_t>();
    // Checkpoints written before text training counted "epoch_images": either name is read.
    s.epoch_samples = (j.contains("epoch_samples") ? j.at("epoch_samples") : j.at("epoch_images")).get<int64_t>();
    s.epoch_seconds = j.at("epoch_seconds").get<double>();
    s.train_images = j.at("train_images").get<int64_t>();
    s.train_seconds = j.at("train_seconds").get<double>();
    s.elapsed_seconds = j.value("elapsed_seconds", 0.0);
    if (!j.at("best").is_null()) s.best = j.at("best").get<double>();
    s.best_epoch = j.at("best_epoch").get<int64_t>();
    s.best_from = j.at("best_from").get<std::string>();
    s.history = j.at("history");
    s.stop_reason = j.value("stop_reason", "");
    s.oom_halvings = j.value("oom_halvings", int64_t{0});
    s.oom_events = j.value("oom_events", json::array());
    s.world_size = j.value("world_size", int64_t{1});
  } catch (const json::exception& e) {
    throw CheckpointError(std::string("checkpoint state.json \"trainer\" is malformed: ") + e.what());
  }
  return s;
}

}  // namespace kg::train
