// The `tensorboard` callback (log.loggers has "tensorboard"): TensorBoard event files in the run (or fold)
// directory. Per update, every log.every_n_steps updates (and the first): train/loss, train/lr,
// train/grad_norm (when measured), train/images_per_s. Per epoch, at the epoch's last update: every
// number of the metrics.jsonl line as epoch/<key>. Hyperparameters: the recipe keys set by a file, an
// environment layer or the command line (HParams tab), the session's end status after the last epoch.
// A resumed run writes a new file that starts with a restart marker at the checkpoint's update, so
// TensorBoard drops what the interrupted process logged after that checkpoint.
#include <chrono>
#include <filesystem>
#include <cmath>
#include <memory>

#include "core/fs.h"
#include "report/tb_events.h"
#include "train/log_options.h"
#include "train/trainer.h"

namespace kg::train {
namespace {

std::map<std::string, report::HParam> recipe_hparams(const config::Recipe& recipe) {
  std::map<std::string, report::HParam> out;
  for (auto& [key, e] : recipe.tree().entries()) {
    if (e.origin.kind == config::Origin::Kind::Default) continue;
    const auto& v = e.value;
    if (v.is_boolean())
      out[key] = v.get<bool>();
    else if (v.is_number())
      out[key] = v.get<double>();
    else if (v.is_string())
      out[key] = v.get<std::string>();
    else
      out[key] = v.dump();
  }
  return out;
}

class TensorBoard : public Callback {
 public:
  TensorBoard(const LogOptions& o, std::map<std::string, report::HParam> hparams)
      : every_(o.every_n_steps), images_(o.images), hparams_(std::move(hparams)) {}
  std::string name() const override { return "tensorboard"; }
  int order() const override { return 82; }

  void on_fit_start(Trainer& t) override {
    w_ = std::make_unique<report::EventWriter>(t.io().dir);
    const double now = report::wall_time_now();
    const int64_t step = t.state().step;
    if (step > 0) w_->write(report::event_session_start(step + 1, now));
    auto hp = hparams_;
    if (!t.io().label.empty()) hp["fold"] = t.io().label;
    w_->write(report::event_hparams_start(hp, "", now, now));
    // The first training batch as the network sees it (fit writes samples.png when log.images is on).
    const std::string samples = (std::filesystem::path(t.io().dir) / "samples.png").string();
    int h = 0, w = 0, c = 0;
    if (images_ && std::filesystem::exists(samples)) {
      const std::string png = read_file(samples);
      if (report::png_size(png, h, w, c)) w_->write(report::event_image("samples", step, png, h, w, c, now));
    }
    w_->flush();
    mark(t);
  }
  void on_epoch_begin(Trainer& t) override { mark(t); }
  void on_step_end(Trainer& t) override {
    const UpdateInfo& u = t.last_update();
    if (u.step != 1 && u.step % every_ != 0) return;
    const double now = report::wall_time_now();
    scalar("train/loss", u.step, u.loss, now);
    scalar("train/lr", u.step, u.lr, now);
    if (std::isfinite(u.grad_norm)) scalar("train/grad_norm", u.step, u.grad_norm, now);
    const double dt = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0_).count();
    const int64_t images = t.state().train_images - images0_;
    if (dt > 0 && images > 0) scalar("train/images_per_s", u.step, images / dt, now);
    w_->flush();
    mark(t);
  }
  void on_epoch_end(Trainer& t, EpochReport&) override {
    const auto& line = t.state().history.back();
    const int64_t step = line["step"].get<int64_t>();
    const double now = report::wall_time_now();
    for (auto& [k, v] : line.items())
      if (k != "step" && v.is_number()) scalar("epoch/" + k, step, v.get<double>(), now);
    w_->flush();
  }
  void on_fit_end(Trainer&) override {
    const double now = report::wall_time_now();
    w_->write(report::event_hparams_end(report::SessionStatus::success, now, now));
    w_->flush();
  }

 private:
  void scalar(const std::string& tag, int64_t step, double v, double now) {
    w_->write(report::event_scalar(tag, step, static_cast<float>(v), now));
  }
  void mark(Trainer& t) {
    t0_ = std::chrono::steady_clock::now();
    images0_ = t.state().train_images;
  }
  int64_t every_;
  bool images_;
  std::map<std::string, report::HParam> hparams_;
  std::unique_ptr<report::EventWriter> w_;
  std::chrono::steady_clock::time_point t0_;
  int64_t images0_ = 0;
};

KG_REGISTER(callback_registry(), "tensorboard",
            "TensorBoard event files: per-update and per-epoch scalars, hparams (log.loggers has \"tensorboard\")",
            "[log]\nloggers = [\"jsonl\", \"csv\", \"tensorboard\"]", config::Fields<config::NoOptions>(),
            [](const config::NoOptions&, const config::Recipe& recipe) -> CallbackPtr {
              const LogOptions o = recipe.get<LogOptions>();
              if (!has_logger(o, "tensorboard")) return nullptr;
              return std::make_unique<TensorBoard>(o, recipe_hparams(recipe));
            });

}  // namespace
}  // namespace kg::train
