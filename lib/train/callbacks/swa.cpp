// SWA: Lightning's StochasticWeightAveraging (pytorch_lightning/callbacks/stochastic_weight_avg.py) with
// torch.optim.swa_utils.SWALR's annealing and update_bn's cumulative BatchNorm statistics.
#include "train/callbacks/swa.h"

#include <cmath>
#include <cstdio>
#include <set>

#include <torch/torch.h>

#include "config/sections.h"
#include "core/error.h"
#include "core/strings.h"
#include "train/bn_recalibrate.h"
#include "train/trainer.h"

namespace kg::train {
namespace {

constexpr const char* kSwaPrefix = "cb.swa.";

config::Fields<SwaOptions> swa_fields() {
  config::Fields<SwaOptions> f;
  f.field("enabled", &SwaOptions::enabled,
          "average the weights of the last epochs (SWA); the average becomes the final model");
  f.field("swa_epoch_start", &SwaOptions::swa_epoch_start,
          "when averaging starts: below 1, the fraction of the epochs trained first (floor(0.8 x 10) = 8); "
          "1 or more, that many epochs (Lightning's 0-based epoch index)")
      .min(0)
      .check([](const config::json& v) -> std::string {
        double x = v.get<double>();
        if (x >= 1 && x != std::floor(x))
          return "expected a fraction below 1 or a whole number of epochs, got " + format_double(x);
        return "";
      });
  f.field("swa_lr", &SwaOptions::swa_lr,
          "learning rate during SWA, reached by annealing (times each layer group's multiplier); 0 = keep the "
          "schedule's lr")
      .min(0);
  f.field("annealing_epochs", &SwaOptions::annealing_epochs,
          "epochs of annealing from the lr at SWA start to swa_lr (Lightning 10), capped at the SWA epochs - 1 so the "
          "last ones run at swa_lr")
      .min(0);
  f.field("annealing_strategy", &SwaOptions::annealing_strategy, "annealing shape (SWALR's anneal_strategy)")
      .choices({"cos", "linear"});
  f.field("use_for_best", &SwaOptions::use_for_best,
          "the recalibrated SWA weights may also become checkpoints/best (they always become the final model)");
  f.field("bn_batches", &SwaOptions::bn_batches,
          "training batches for the BatchNorm statistics of the SWA weights (0 = a full pass)")
      .min(0);
  return f;
}

KG_REGISTER_SECTION("swa", "stochastic weight averaging of the last epochs (Lightning StochasticWeightAveraging)",
                    swa_fields().schema(), "");

KG_REGISTER(callback_registry(), "swa",
            "stochastic weight averaging: lr annealed to swa_lr, weights averaged per epoch, BatchNorm recomputed "
            "(keys in [swa])",
            "[swa]\nenabled = true\nswa_lr = 0.01", config::Fields<config::NoOptions>(),
            [](const config::NoOptions&, const config::Recipe& recipe) -> CallbackPtr {
              auto o = recipe.get<SwaOptions>();
              return o.enabled ? std::make_unique<SwaCallback>(o) : nullptr;
            });

// CheckpointError when the average and the module's parameters differ in names or shapes.
void check_match(const model::TensorMap& avg, const torch::nn::Module& m) {
  std::vector<std::string> problems;
  std::set<std::string> names;
  for (const auto& p : m.named_parameters(true)) {
    names.insert(p.key());
    auto it = avg.find(p.key());
    if (it == avg.end())
      problems.push_back("missing " + p.key());
    else if (it->second.sizes() != p.value().sizes())
      problems.push_back(p.key() + " " + c10::str(it->second.sizes()) + " vs model " + c10::str(p.value().sizes()));
  }
  for (auto& [n, t] : avg)
    if (!names.count(n)) problems.push_back("unexpected " + n);
  if (problems.size() > 5) {
    problems.resize(5);
    problems.push_back("...");
  }
  KG_CHECK(problems.empty(), CheckpointError, "the SWA average (state tensors ", kSwaPrefix,
           "*) does not match the model: ", join(problems, ", "),
           "; resume with the recipe that wrote the checkpoint, or set swa.enabled = false");
}

std::string format_values(const std::map<std::string, double>& values) {
  std::vector<std::string> parts;
  for (auto& [k, v] : values) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.4g", v);
    parts.push_back(k + " " + buf);
  }
  return join(parts, ", ");
}

}  // namespace

SwaOptions SwaOptions::load(const config::Tree& recipe) { return swa_fields().load(config::Options(&recipe, "swa")); }

int64_t swa_start_epoch(const SwaOptions& o, int64_t epochs) {
  if (o.swa_epoch_start < 1) return static_cast<int64_t>(std::floor(o.swa_epoch_start * static_cast<double>(epochs)));
  return static_cast<int64_t>(o.swa_epoch_start);
}

double swalr_lr(double lr0, double swa_lr, int64_t anneal_epochs, const std::string& strategy, int64_t k) {
  if (anneal_epochs <= 0) return swa_lr;  // SWALR: step = max(1, step), so t = 1 from the start
  const double t = std::clamp(static_cast<double>(k) / static_cast<double>(anneal_epochs), 0.0, 1.0);
  const double alpha = strategy == "linear" ? t : (1 - std::cos(M_PI * t)) / 2;
  return swa_lr * alpha + lr0 * (1 - alpha);
}

bool SwaCallback::active(Trainer& t, int64_t epoch) {
  if (started_) return epoch >= start_;
  const int64_t epochs = t.plan().epochs();
  const int64_t s = swa_start_epoch(o_, epochs);
  if (epoch < s) return false;
  started_ = true;
  start_ = s;
  anneal_ = std::min(o_.annealing_epochs, std::max<int64_t>(0, epochs - s - 1));
  std::string line = "  swa: averaging the weights of epochs " + std::to_string(s + 1) + ".." + std::to_string(epochs);
  if (o_.swa_lr > 0)
    line += "; lr anneals to " + format_double(o_.swa_lr) + " over " + std::to_string(anneal_) + " epoch" +
            (anneal_ == 1 ? "" : "s") + " (" + o_.annealing_strategy + ")";
  t.log(line);
  return true;
}

void SwaCallback::on_step_begin(Trainer& t) {
  const int64_t epoch = t.state().epoch;
  if (!active(t, epoch) || o_.swa_lr <= 0) return;
  if (lr0_ < 0) lr0_ = t.optimizer().lr();  // the schedule's lr at the first SWA update
  lr_ = swalr_lr(lr0_, o_.swa_lr, anneal_, o_.annealing_strategy, epoch - start_);
  t.optimizer().set_lr(lr_);
}

void SwaCallback::on_epoch_end(Trainer& t, EpochReport& r) {
  const int64_t epoch = r.epoch - 1;
  if (!active(t, epoch)) return;
  if (epoch > last_epoch_) {
    accumulate(t.net());
    last_epoch_ = epoch;
  }
  if (o_.swa_lr > 0 && lr_ >= 0) r.values["lr"] = lr_;  // the lr the epoch really used
}

void SwaCallback::on_fit_end(Trainer& t) {
  if (n_ == 0) {
    t.log("  swa: no epoch was averaged (swa.swa_epoch_start = " + format_double(o_.swa_epoch_start) +
          " starts after epoch " + std::to_string(swa_start_epoch(o_, t.plan().epochs())) + " of " +
          std::to_string(t.plan().epochs()) + " and the run ended after " + std::to_string(t.state().epoch) +
          "); the model keeps its trained weights");
    return;
  }
  apply_to(t.net());
  int64_t bn_layers = 0;
  {
    auto loader = t.train_loader(t.plan().epochs());
    bn_layers = recalibrate_bn(t.net(), *loader, t.device(), o_.bn_batches);
  }
  auto ev = t.evaluate();
  final_ = model::state_dict(t.net());
  t.log("  swa: " + std::to_string(n_) + " epochs averaged" +
        (bn_layers ? ", BatchNorm statistics recomputed (" + std::to_string(bn_layers) + " layers)" : std::string()) +
        "; swa: valid " + format_values(ev.values));
  if (!o_.use_for_best) return;
  const auto& mon = t.metrics().monitor();
  auto it = ev.values.find(mon);
  auto& s = t.state();
  if (it == ev.values.end() || !std::isfinite(it->second) || (s.best && !t.metrics().better(it->second, *s.best)))
    return;
  s.best = it->second;
  s.best_epoch = s.epoch;
  s.best_from = "swa";
  t.store().save_best(t.checkpoint_files());
  t.log("  swa: the SWA weights are the new best (" + mon + " " + format_double(it->second) + ") -> checkpoints/best");
}

void SwaCallback::accumulate(const torch::nn::Module& m) {
  torch::NoGradGuard no_grad;
  if (n_ == 0) {
    avg_.clear();
    for (const auto& p : m.named_parameters(true)) avg_[p.key()] = p.value().detach().clone();
    n_ = 1;
    return;
  }
  check_match(avg_, m);
  const double div = static_cast<double>(n_ + 1);
  for (const auto& p : m.named_parameters(true)) {
    auto& a = avg_.at(p.key());
    const auto& w = p.value();
    if (a.device() != w.device() || a.scalar_type() != w.scalar_type()) {  // restored from a checkpoint (CPU)
      auto moved = at::empty_like(w.detach(), at::MemoryFormat::Preserve);
      moved.copy_(a);
      a = moved;
    }
    a.add_((w.detach() - a).div_(div));  // Lightning's avg_fn: avg + (w - avg) / (n + 1)
  }
  ++n_;
}

void SwaCallback::apply_to(torch::nn::Module& m) const {
  check_match(avg_, m);
  torch::NoGradGuard no_grad;
  for (auto& p : m.named_parameters(true)) p.value().copy_(avg_.at(p.key()));
}

const model::TensorMap* SwaCallback::extra_weights() const {
  if (!final_.empty()) return &final_;
  return n_ > 0 ? &avg_ : nullptr;
}

void SwaCallback::save_state(model::TensorMap& tensors, nlohmann::json& state) const {
  for (auto& [n, a] : avg_)
    tensors[kSwaPrefix + n] =
        a.detach().to(at::TensorOptions().device(at::kCPU), /*non_blocking=*/false, /*copy=*/true);
  state = {{"n", n_},     {"started", started_}, {"start", start_},          {"anneal", anneal_},
           {"lr0", lr0_}, {"lr", lr_},           {"last_epoch", last_epoch_}};
}

void SwaCallback::load_state(const model::TensorMap& tensors, const nlohmann::json& state) {
  if (!state.is_object() || state.empty()) return;  // the checkpoint was written without SWA: start fresh
  try {
    n_ = state.at("n").get<int64_t>();
    started_ = state.at("started").get<bool>();
    start_ = state.at("start").get<int64_t>();
    anneal_ = state.at("anneal").get<int64_t>();
    lr0_ = state.at("lr0").get<double>();
    lr_ = state.at("lr").get<double>();
    last_epoch_ = state.at("last_epoch").get<int64_t>();
  } catch (const nlohmann::json::exception& e) {
    throw CheckpointError(std::string("checkpoint state.json callbacks.swa is malformed: ") + e.what());
  }
  const std::string prefix = kSwaPrefix;
  avg_.clear();
  for (auto it = tensors.lower_bound(prefix); it != tensors.end() && it->first.compare(0, prefix.size(), prefix) == 0;
       ++it)
    avg_[it->first.substr(prefix.size())] = it->second;
  KG_CHECK(n_ == 0 || !avg_.empty(), CheckpointError, "the checkpoint's state.json says ", n_,
           " epochs were averaged by SWA but state.safetensors holds no ", prefix,
           "* tensors: the checkpoint is damaged");
  final_.clear();
}

}  // namespace kg::train
