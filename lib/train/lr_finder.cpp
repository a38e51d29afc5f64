#include "train/lr_finder.h"

#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>

#include "config/sections.h"
#include "core/error.h"
#include "core/stop.h"
#include "core/strings.h"
#include "data/loader.h"
#include "loss/loss.h"
#include "model/model.h"
#include "optim/optimizer.h"
#include "optim/param_groups.h"
#include "train/options.h"
#include "train/plan.h"
#include "train/rng_state.h"
#include "train/step.h"

namespace kg::train {
namespace {

config::Fields<LrFindOptions> lr_finder_fields() {
  config::Fields<LrFindOptions> f;
  f.field("start_lr", &LrFindOptions::start_lr, "lr of the sweep's first update").positive();
  f.field("end_lr", &LrFindOptions::end_lr,
          "lr the sweep reaches at update num_steps (exponential from start_lr; must exceed it)")
      .positive();
  f.field("num_steps", &LrFindOptions::num_steps,
          "optimizer updates in the sweep (fastai num_it; fewer when it stops early)")
      .range(7, 10000);  // 7: two points left after the first num_steps/10 and the last 5
  f.field("beta", &LrFindOptions::beta,
          "smoothing of the recorded loss: debiased running average with this weight on the past")
      .min(0)
      .check([](const config::json& v) -> std::string {
        return v.get<double>() < 1 ? "" : "expected a float in [0, 1), got " + v.dump();
      });
  f.field("stop_div", &LrFindOptions::stop_div,
          "stop when the smoothed loss exceeds div_factor x its lowest value so far");
  f.field("div_factor", &LrFindOptions::div_factor,
          "divergence threshold of stop_div, a multiple of the best smoothed loss")
      .min(1, true);
  f.field("suggestion", &LrFindOptions::suggestion,
          "the suggestion used (fit optim.lr = \"find\"): valley (longest descent), slide (interval slide rule), "
          "minimum (lr at the lowest loss / 10) or steep (steepest descent)")
      .choices({"valley", "slide", "minimum", "steep"});
  return f;
}
KG_REGISTER_SECTION("lr_find", "the learning-rate finder (kgtrain lr-find, fit optim.lr = \"find\"; fastai lr_find)",
                    lr_finder_fields().schema(), "");

// "0.00123", "1.2e-07": three significant digits.

}  // namespace

LrFindOptions LrFindOptions::load(const config::Tree& recipe) {
  auto o = lr_finder_fields().load(config::Options(&recipe, "lr_find"));
  KG_CHECK(o.start_lr < o.end_lr, ConfigError, "lr_find.start_lr = ", format_significant(o.start_lr, 3),
           " must be below lr_find.end_lr = ", format_significant(o.end_lr, 3),
           " (the sweep goes up; fastai's defaults are 1e-7 and 10)");
  return o;
}

double sweep_lr(const LrFindOptions& o, int64_t i) {
  return o.start_lr * std::pow(o.end_lr / o.start_lr, static_cast<double>(i) / static_cast<double>(o.num_steps));
}

double SmoothLoss::add(double loss) {
  // torch.lerp(loss, val, beta) = loss + beta * (val - loss)
  val_ = loss + beta_ * (val_ - loss);
  pow_ *= beta_;
  return val_ / (1 - pow_);
}

// --- the sweep -----------------------------------------------------------------------------------

LrFindResult sweep(const LrFindOptions& o, const LrUpdateFn& update, const LrProgressFn& progress) {
  LrFindResult r;
  r.options = o;
  const auto t0 = std::chrono::steady_clock::now();
  SmoothLoss smooth(o.beta);
  double best = INFINITY;
  for (int64_t i = 0; i < o.num_steps; ++i) {
    if (int sig = stop_signal().load())
      throw Interrupted(sig == SIGTERM ? kExitSigterm : kExitSigint,
                        "lr finder stopped by signal " + std::to_string(sig) + " at update " + std::to_string(i) +
                            "; the model is as it was, nothing was written");
    const double lr = sweep_lr(o, i);
    const double loss = update(i, lr);
    const double s = smooth.add(loss);
    r.lrs.push_back(lr);
    r.losses.push_back(loss);
    r.smoothed.push_back(s);
    if (progress) progress(r);
    // fastai LRFinder.after_batch: best first, then the divergence test, then NaN.
    if (s < best) best = s;
    if (o.stop_div && s > o.div_factor * best) {
      r.stopped_early = i + 1 < o.num_steps;
      r.stop_reason = "smoothed loss " + format_significant(s, 3) + " > " + format_significant(o.div_factor, 3) +
                      " x best " + format_significant(best, 3) + " at update " + std::to_string(i + 1);
      break;
    }
    if (!std::isfinite(loss) || !std::isfinite(s)) {
      r.stopped_early = true;
      r.stop_reason = "non-finite loss at update " + std::to_string(i + 1);
      break;
    }
  }
  if (!r.stopped_early) r.stop_reason.clear();
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  suggest(r);
  return r;
}

// --- on a network ----------------------------------------------------------------------------------

namespace {

class LoaderSource : public BatchSource {
 public:
  explicit LoaderSource(std::unique_ptr<data::Loader> l) : l_(std::move(l)) {}
  int64_t size() const override { return l_->size(); }
  bool next(data::Batch& b) override { return l_->next(b); }

 private:
  std::unique_ptr<data::Loader> l_;
};

// Everything the sweep changes on a network, copied on construction and put back on destruction
// (also when the sweep throws): parameters and buffers bit for bit, requires_grad, gradients, the
// train/eval mode, and every random generator.
class NetworkState {
 public:
  explicit NetworkState(model::Network& net) : net_(net), rng_(capture_rng()), training_(net.is_training()) {
    torch::NoGradGuard ng;
    for (auto& p : net.named_parameters(true)) {
      auto& t = p.value();
      params_.push_back(
          {t, t.detach().clone(), t.requires_grad(), t.grad().defined() ? t.grad().detach().clone() : at::Tensor()});
    }
    for (auto& b : net.named_buffers(true)) buffers_.push_back({b.value(), b.value().detach().clone()});
  }
  ~NetworkState() {
    torch::NoGradGuard ng;
    for (auto& s : params_) {
      s.live.detach().copy_(s.value);
      s.live.set_requires_grad(s.requires_grad);
      s.live.mutable_grad() = s.grad;
    }
    for (auto& [live, value] : buffers_) live.detach().copy_(value);
    net_.train(training_);
    restore_rng(rng_);
  }
  NetworkState(const NetworkState&) = delete;
  NetworkState& operator=(const NetworkState&) = delete;

 private:
  struct Param {
    at::Tensor live, value;
    bool requires_grad;
    at::Tensor grad;
  };
  model::Network& net_;
  model::TensorMap rng_;
  bool training_;
  std::vector<Param> params_;
  std::vector<std::pair<at::Tensor, at::Tensor>> buffers_;
};

}  // namespace

std::unique_ptr<BatchSource> loader_source(std::unique_ptr<data::Loader> loader) {
  return std::make_unique<LoaderSource>(std::move(loader));
}

SweepStep::SweepStep(const FinderParts& p)
    : p_(p),
      topt_((*p.recipe).get<TrainOptions>()),
      policy_(topt_),
      scaler_(p.scaler),
      step_{p.net, p.loss, p.precision, p.device.type(), p.scaler.enabled()} {
  KG_ASSERT(p.net && p.recipe && p.loss && p.batches, "lr finder: incomplete parts");
  auto& net = *p.net;
  const config::Recipe recipe = optim::with_numeric_lr(*p.recipe);
  opt_ = optim::build(recipe, net);
  // fit's first epoch: only its freezing and multipliers are read, so any number of updates per epoch
  // will do, as long as schedules that need several (one_cycle) can be built.
  Plan plan(
      recipe, topt_.epochs, [](int64_t, int64_t) { return int64_t{1000}; }, net.group_names());
  LayerFreezer(net, topt_.train_bn).apply(plan, 0, *opt_);
  params_ = net.parameters();
  net.train();
  open_epoch(0);
}

SweepStep::~SweepStep() = default;

void SweepStep::open_epoch(int64_t e) {
  epoch_ = e;
  src_ = p_.batches(e);
  KG_CHECK(src_ && src_->size() > 0, DataError, "lr finder: epoch ", e,
           " of the training rows makes no micro-batch of train.batch_size (the rows are fewer than one batch); "
           "lower train.batch_size");
}

double SweepStep::update(double lr) {
  opt_->set_lr(lr);
  opt_->zero_grad();
  data::Batch b;
  if (!src_->next(b)) {
    open_epoch(epoch_ + 1);
    KG_ASSERT(src_->next(b), "lr finder: a new epoch yielded no batch");
  }
  // fit's groups: train.accum_steps micro-batches, or what is left of the epoch.
  const int64_t group_size = std::min<int64_t>(topt_.accum_steps, src_->size() - b.index);
  const at::Tensor weight = step_.weight_tensor(MicroStep::weight_of(group_size, scaler_), p_.device);
  at::Tensor group_loss = torch::zeros({}, torch::TensorOptions().device(p_.device));
  for (int64_t m = 0; m < group_size; ++m) {
    if (m > 0) KG_ASSERT(src_->next(b), "lr finder: the epoch ended inside an accumulation group");
    DeviceBatch d = to_device(b, p_.device);
    if (p_.mix) p_.mix(d.in.pixels, d.y, epoch_, b.index);
    const at::Tensor l = step_.forward(d.in, d.y);
    step_.backward(l, weight);
    group_loss += l.detach();
  }
  last_ = policy_.finish(params_, group_loss, *opt_, scaler_);
  return last_.loss_sum / static_cast<double>(group_size);
}

void SweepStep::drop_gradients() { opt_->zero_grad(); }

LrFindResult find_lr(const LrFindOptions& o, const FinderParts& p) {
  NetworkState saved(*p.net);
  SweepStep step(p);
  auto r = sweep(
      o, [&](int64_t, double lr) { return step.update(lr); }, p.progress);
  step.drop_gradients();
  return r;
}

}  // namespace kg::train
