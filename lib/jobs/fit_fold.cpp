// One fold of `kgtrain fit`: its network, optimizer, plan, loaders and callbacks, the Trainer (resumed
// when asked), then the fold's out-of-fold predictions with checkpoints/best.
#include "jobs/fit_run.h"

#include <torch/torch.h>

#include <chrono>
#include <filesystem>
#include <optional>

#include "config/resolve.h"
#include "core/error.h"
#include "core/fs.h"
#include "core/stop.h"
#include "core/strings.h"
#include "device/device.h"
#include "jobs/fit_resume.h"
#include "jobs/sample_grid.h"
#include "model/batchnorm.h"
#include "model/model.h"
#include "model/weights/weights.h"
#include "optim/optimizer.h"
#include "report/plot.h"
#include "session/oof.h"
#include "session/session.h"
#include "session/modality.h"
#include "session/training.h"
#include "train/callback.h"
#include "train/checkpoint.h"
#include "train/engine.h"
#include "train/log_options.h"
#include "train/options.h"
#include "train/plan.h"
#include "train/trainer.h"

namespace fs = std::filesystem;
using nlohmann::json;
using Clock = std::chrono::steady_clock;

namespace kg::jobs {

FitRun::FoldOutcome FitRun::train_fold(size_t index, int64_t k) {
  FoldOutcome out;
  const fs::path dir = multi_ ? fs::path(run_dir_) / ("fold_" + std::to_string(k)) : fs::path(run_dir_);
  make_directories(dir.string());
  // Where a resume reads from: the run itself (a non-writing rank's own outputs are scratch).
  const fs::path src =
      resuming_ ? (multi_ ? fs::path(target_.run_dir) / ("fold_" + std::to_string(k)) : fs::path(target_.run_dir))
                : dir;
  // Rank 0 looks (the other ranks' disks may not hold the run) and every rank skips the finished fold alike.
  const std::string finished =
      resuming_ ? rank0_text(s_.group, writer_ && fs::exists(src / "fold.json") && fs::exists(src / "oof_fold.csv")
                                           ? read_file((src / "fold.json").string())
                                           : std::string())
                : std::string();
  if (!finished.empty()) {
    log("fold " + std::to_string(k) + ": already finished in " + src.string() + "; skipped");
    out.status = "completed";
    out.summary = json::parse(finished);
    return out;
  }
  const auto& recipe = recipe_;
  const auto& dev = s_.dev;
  auto [train_rows, valid_rows] = s_.split_of(k);
  auto net = s_.build_net(train_rows).net;
  net->to(dev.device);
  if (dev.channels_last) net->set_channels_last(true);
  auto opt = optim::build(recipe, *net);
  train::Plan plan(recipe, s_.epochs, s_.steps_of(train_rows), net->group_names());
  auto train_loader = [&, rows = train_rows](int64_t epoch, int64_t start) {
    return s_.train_loader(rows, epoch, plan.epochs(), start);
  };
  auto valid_loader = [&, rows = valid_rows]() { return s_.valid_loader(rows); };
  train::TrainerIO io;
  io.dir = dir.string();
  io.label = multi_ ? "fold " + std::to_string(k) : "";
  io.recipe_toml = config::to_toml(recipe.tree(), false);
  io.provenance = session::provenance(o_);
  io.state_fields = {{"kgtrain", "fit"},
                     {"model", model::model_name(recipe)},
                     {"classes", s_.data.classes.to_json()},
                     {"task", task_name(s_.data.task)},
                     {"input", input_json()},
                     {"fold", k},
                     {"folds", s_.opt.cv.folds}};
  io.progress = {o_.quiet, o_.tty, s_.opt.train.log_every_s, o_.columns};
  io.log = [this](const std::string& l) { log(l); };
  if (const double budget = train::parse_duration(s_.opt.run.time_limit); budget > 0) {
    // The budget left is shared by the folds still to train.
    double left = budget - elapsed();
    double share = left / static_cast<double>(s_.opt.cv.run_folds.size() - index);
    io.deadline = Clock::now() + std::chrono::milliseconds(static_cast<int64_t>(std::max(0.0, share) * 1000));
  }
  train::TrainerParts parts{net.get(),
                            opt.get(),
                            s_.loss.get(),
                            s_.metrics.get(),
                            dev.device,
                            s_.data.task,
                            dev.precision,
                            dev.make_scaler(),
                            s_.group,
                            static_cast<int64_t>(s_.opt.device.dist_bucket_mb * (1 << 20)),
                            s_.opt.device.dist_overlap,
                            s_.shards_validation(valid_rows.size()),
                            s_.cuda_graphs};
  // SyncBatchNorm for this fold's training loop (the trainer turns it off when the loop ends).
  if (s_.group && s_.opt.device.sync_batchnorm) {
    auto g = s_.group;
    model::set_batchnorm_sync([g](const at::Tensor& t) { return g->differentiable_sum(t); });
  }
  write_samples_png(dir, train_rows, k);
  train::Trainer trainer(std::move(parts), plan, s_.opt.train, s_.opt.checkpoint, train_loader, valid_loader,
                         s_.mix_fn(), train::build_callbacks(recipe), io);
  if (resuming_)
    resume_fold(trainer, target_, src.string(), dir.string(), k,
                multi_ ? "fold " + std::to_string(k) + ": " : std::string(), writer_, s_.group, o_);
  auto outcome = trainer.fit();
  const auto& st = trainer.state();
  out.status = outcome.status;
  out.signal = outcome.signal;
  out.summary = {
      {"fold", k},
      {"status", outcome.status},
      {"epochs_completed", st.epoch},
      {"updates", st.step},
      {"skipped_updates", st.skipped_updates},
      {"precision", device::precision_name(dev.precision)},
      {"processes", o_.dist.world_size},
      {"validation_shards", s_.shards_validation(valid_rows.size()) ? o_.dist.world_size : 1},
      {"best",
       {{"metric", s_.monitor},
        {"mode", s_.metrics->higher_is_better() ? "max" : "min"},
        {"value", st.best ? json(*st.best) : json()},
        {"epoch", st.best_epoch},
        {"from", st.best_from}}},
      {"train_images_per_s", st.train_seconds > 0 ? static_cast<double>(st.train_images) / st.train_seconds : 0.0},
      {"dir", dir.string()}};
  if (!st.stop_reason.empty()) out.summary["stop_reason"] = st.stop_reason;
  if (trainer.scaler().enabled()) out.summary["loss_scaler"] = trainer.scaler().state();
  if (st.oom_halvings > 0) out.summary["oom_backoff"] = {{"halvings", st.oom_halvings}, {"events", st.oom_events}};
  // A signal after the last update (the fold is trained and its checkpoints saved) stops before the out-of-fold
  // predictions, which --resume makes again: SIGTERM means stop now, however long prediction would take. (With
  // several processes only the loop's vote shares a signal between ranks: they predict together as before.)
  if (outcome.status != "interrupted" && !s_.group && stop_signal().load() != 0) {
    out.status = outcome.status = "interrupted";
    out.signal = stop_signal().load();
    out.summary["status"] = "interrupted";
  }
  if (outcome.status == "interrupted") return out;
  std::optional<train::PredictionsStopOnSignal> stop;
  if (!s_.group) stop.emplace();  // the fold is saved: a signal may stop its prediction
  predict_oof(*net, valid_rows, k, dir.string(), out);
  return out;
}

void FitRun::write_samples_png(const fs::path& dir, const std::vector<int64_t>& train_rows, int64_t k) const {
  // The first training batch as the network sees it (log.images; the TensorBoard logger shows it); a text batch
  // has no picture.
  if (!recipe_.get<train::LogOptions>().images ||
      !session::modality_of(s_.opt.data).can(session::Capability::show_batch) || !report::can_plot() ||
      fs::exists(dir / "samples.png"))
    return;
  write_file_atomic(
      (dir / "samples.png").string(),
      training_sample_png(s_, train_rows, 16, 0,
                          "training batch, epoch 1" + (multi_ ? ", fold " + std::to_string(k) : std::string())));
}

json FitRun::input_json() const { return session::modality_of(s_.opt.data).input_json(s_.opt.data, s_.data.geom); }

void FitRun::predict_oof(model::Network& net, const std::vector<int64_t>& valid_rows, int64_t k, const std::string& dir,
                         FoldOutcome& out) {
  // Out-of-fold predictions with the weights tta-predict uses by default: checkpoints/best.
  const fs::path best = fs::path(dir) / "checkpoints" / "best";
  std::string used = "final weights";
  if (fs::exists(best) && train::checkpoint_problem(best.string(), false).empty()) {
    model::load_state_dict(net, train::load_checkpoint(best.string(), false).weights, true, best.string());
    used = "checkpoints/best";
  }
  if (s_.group) {
    // Every rank predicts its share with rank 0's weights (a resumed run's earlier best is in rank 0's folder only).
    train::broadcast_weights(net, *s_.group);
    std::vector<std::string> u{used};
    s_.group->broadcast_strings(u);
    used = u[0];
  }
  auto vl = s_.valid_loader(valid_rows);
  auto pred = train::predict(net, *vl, s_.dev.device, nullptr, s_.data.task, s_.dev.precision);
  if (s_.shards_validation(valid_rows.size())) train::gather_predictions(pred, *s_.group);
  const auto& metrics = *s_.metrics;
  const std::string name = s_.monitor == "valid_loss" ? metrics.names().front() : s_.monitor;
  const double value = metrics.compute(pred.probs, pred.targets).at(name);
  out.summary["oof"] = {{"weights", used}, {"rows", pred.images}};
  session::write_oof_fold(dir, s_.data.table, s_.data.classes, s_.opt.data.id_col, k, s_.opt.cv.folds, name, pred,
                          out.summary);
  log((multi_ ? "fold " + std::to_string(k) + ": " : std::string()) + "out-of-fold " + name + " " +
      format_significant(value, 4) + " on " + std::to_string(pred.images) + " rows (" + used + ")");
  if (multi_) session::write_summary(dir, out.summary);
}

}  // namespace kg::jobs
