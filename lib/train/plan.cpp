#include "train/plan.h"

#include <cmath>
#include <sstream>

#include "core/error.h"
#include "core/strings.h"
#include "optim/optimizer.h"
#include "optim/schedules/fastai_one_cycle.h"
#include "train/options.h"

namespace kg::train {

std::vector<double> even_mults(double start, double stop, int64_t n) {
  if (n <= 1) return {stop};
  std::vector<double> out;
  double step = std::pow(stop / start, 1.0 / static_cast<double>(n - 1));
  for (int64_t i = 0; i < n; ++i) out.push_back(start * std::pow(step, static_cast<double>(i)));
  return out;
}

Plan::Plan(const config::Recipe& recipe, int64_t epochs, StepsOf steps_of, std::vector<std::string> group_names)
    : recipe_(recipe),
      train_epochs_(epochs),
      num_groups_(static_cast<int64_t>(group_names.size())),
      steps_of_(std::move(steps_of)),
      group_names_(std::move(group_names)) {
  auto t = recipe.get<TrainOptions>();
  mode_ = t.mode;
  freeze_ = t.freeze;
  unfreeze_every_ = t.unfreeze_every;
  const std::string groups = join(group_names_, ", ");
  if (mode_ == "fine_tune") {
    KG_CHECK(num_groups_ >= 2, ConfigError,
             "train.mode = \"fine_tune\" freezes every layer group but the head, but model ", "has only one group (",
             groups, "): nothing would be frozen. Use train.mode = \"normal\" or a backbone with groups");
    KG_CHECK(freeze_ == 0 && unfreeze_every_ == 0, ConfigError,
             "train.mode = \"fine_tune\" sets its own freezing; remove train.freeze / train.unfreeze_every");
    epochs_ = t.freeze_epochs + train_epochs_;
  } else {
    epochs_ = train_epochs_;
    if (freeze_ > 0) {
      KG_CHECK(num_groups_ >= 2, ConfigError, "train.freeze = ", freeze_, ": the model has only one layer group (",
               groups, "), so freezing would be a silent no-op; remove train.freeze or use a backbone with groups");
      KG_CHECK(freeze_ < num_groups_, ConfigError, "train.freeze = ", freeze_, " would freeze nothing: the model has ",
               num_groups_, " layer groups (", groups, ") and train.freeze is how many of the LAST groups train, 1..",
               num_groups_ - 1, " (0 = all, no freezing)");
    }
    KG_CHECK(unfreeze_every_ == 0 || freeze_ > 0, ConfigError,
             "train.unfreeze_every needs train.freeze > 0 (the number of last groups trained at the start)");
  }
  build();
}

void Plan::build() {
  phases_.clear();
  auto t = recipe_.get<TrainOptions>();
  auto o = recipe_.get<optim::OptimOptions>();
  if (mode_ == "fine_tune") {
    // fastai Learner.fine_tune(epochs, base_lr, freeze_epochs, lr_mult, pct_start, div).
    double base = optim::peak_lr(o);
    KG_CHECK(!o.lr.slice(), ConfigError, "train.mode = \"fine_tune\" takes one base lr in optim.lr (fastai base_lr); ",
             "it spreads it over the groups itself (train.fine_tune_lr_mult)");
    int64_t first = 0;
    if (t.freeze_epochs > 0) {
      Phase p;
      p.epochs = t.freeze_epochs;
      p.first_step = 0;
      int64_t n = first_step_of_epoch(t.freeze_epochs);
      p.schedule = optim::fastai_one_cycle(base, n, 0.99, 25.0, 1e5);
      // slice(base_lr): base_lr/10 for every group but the last.
      p.group_lr_mult.assign(static_cast<size_t>(num_groups_), 0.1);
      p.group_lr_mult.back() = 1.0;
      p.frozen_groups = num_groups_ - 1;
      phases_.push_back(std::move(p));
      first = n;
    }
    Phase q;
    q.epochs = train_epochs_;
    q.first_step = first;
    double lr = base / 2;
    q.schedule = optim::fastai_one_cycle(lr, total_steps() - first, t.fine_tune_pct_start, t.fine_tune_div, 1e5);
    auto m = even_mults(lr / t.fine_tune_lr_mult, lr, num_groups_);
    for (auto& v : m) v /= lr;
    q.group_lr_mult = m;
    q.frozen_groups = 0;
    phases_.push_back(std::move(q));
    return;
  }
  Phase p;
  p.epochs = epochs_;
  p.first_step = 0;
  int64_t total = total_steps();
  p.schedule = optim::build_schedule(recipe_, {optim::peak_lr(o), total, steps_in_epoch(epochs_ - 1)});
  p.frozen_groups = freeze_ > 0 ? num_groups_ - freeze_ : 0;
  phases_.push_back(std::move(p));
}

int64_t Plan::first_step_of_epoch(int64_t epoch) const {
  int64_t s = 0;
  for (int64_t e = 0; e < epoch; ++e) s += steps_of_(e, epochs_);
  return s;
}

const Phase& Plan::phase_of_step(int64_t step) const {
  for (size_t i = phases_.size(); i-- > 1;)
    if (step >= phases_[i].first_step) return phases_[i];
  return phases_.front();
}

const Phase& Plan::phase_of_epoch(int64_t epoch) const {
  int64_t start = 0;
  for (auto& p : phases_) {
    if (epoch < start + p.epochs) return p;
    start += p.epochs;
  }
  return phases_.back();
}

double Plan::lr_at(int64_t step) const {
  auto& p = phase_of_step(step);
  return p.schedule->lr_at(step - p.first_step);
}

std::optional<double> Plan::momentum_at(int64_t step) const {
  auto& p = phase_of_step(step);
  return p.schedule->momentum_at(step - p.first_step);
}

const std::vector<double>* Plan::group_lr_mult(int64_t epoch) const {
  auto& p = phase_of_epoch(epoch);
  return p.group_lr_mult.empty() ? nullptr : &p.group_lr_mult;
}

int64_t Plan::frozen_groups(int64_t epoch) const {
  auto& p = phase_of_epoch(epoch);
  if (mode_ == "fine_tune" || freeze_ == 0) return p.frozen_groups;
  int64_t thawed = unfreeze_every_ > 0 ? epoch / unfreeze_every_ : 0;
  return std::max<int64_t>(0, p.frozen_groups - thawed);
}

void Plan::observe(int64_t step, const std::map<std::string, double>& values) {
  for (auto& p : phases_) p.schedule->observe(step - p.first_step, values);
}

void Plan::rescale(int64_t epochs) {
  KG_CHECK(mode_ != "fine_tune" || epochs > recipe_.get<TrainOptions>().freeze_epochs, ConfigError,
           "the time budget leaves no unfrozen epoch for fine_tune");
  if (mode_ == "fine_tune")
    train_epochs_ = epochs - recipe_.get<TrainOptions>().freeze_epochs;
  else
    train_epochs_ = epochs;
  epochs_ = epochs;
  auto saved = state();
  build();
  load_state(saved);
}

nlohmann::json Plan::state() const {
  nlohmann::json s = {{"epochs", epochs_}, {"schedules", nlohmann::json::array()}};
  for (auto& p : phases_) s["schedules"].push_back(p.schedule->state());
  return s;
}

void Plan::load_state(const nlohmann::json& s) {
  if (s.contains("epochs") && s["epochs"].get<int64_t>() != epochs_) {
    int64_t e = s["epochs"].get<int64_t>();
    train_epochs_ = mode_ == "fine_tune" ? e - recipe_.get<TrainOptions>().freeze_epochs : e;
    epochs_ = e;
    build();
  }
  if (s.contains("schedules"))
    for (size_t i = 0; i < phases_.size() && i < s["schedules"].size(); ++i)
      phases_[i].schedule->load_state(s["schedules"][i]);
}

std::string Plan::describe() const {
  std::ostringstream os;
  os << epochs_ << " epochs, " << total_steps() << " updates";
  if (mode_ == "fine_tune")
    os << "; fine_tune: " << (phases_.size() > 1 ? std::to_string(phases_[0].epochs) : std::string("0"))
       << " epoch(s) with " << num_groups_ - 1 << " of " << num_groups_ << " groups frozen, then all";
  else if (freeze_ > 0)
    os << "; " << num_groups_ - freeze_ << " of " << num_groups_ << " groups frozen"
       << (unfreeze_every_ > 0 ? ", one more thawed every " + std::to_string(unfreeze_every_) + " epochs" : "");
  return os.str();
}

}  // namespace kg::train
