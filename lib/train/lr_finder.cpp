#include "train/lr_finder.h"

#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <unordered_set>

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

namespace kg::train {
namespace {

config::Fields<LrFindOptions> fields() {
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
                    fields().schema(), "");

// "0.00123", "1.2e-07": three significant digits.
std::string num(double v) { return format_significant(v, 3); }

}  // namespace

LrFindOptions load_lr_find_options(const config::Tree& recipe) {
  auto o = fields().load(config::Options(&recipe, "lr_find"));
  KG_CHECK(o.start_lr < o.end_lr, ConfigError, "lr_find.start_lr = ", num(o.start_lr),
           " must be below lr_find.end_lr = ", num(o.end_lr),
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

// --- suggestions ---------------------------------------------------------------------------------

LrCurve suggestion_curve(const std::vector<double>& lrs, const std::vector<double>& smoothed, int64_t num_steps) {
  // Python's x[num_steps // 10 : -5].
  const int64_t n = static_cast<int64_t>(std::min(lrs.size(), smoothed.size()));
  const int64_t begin = std::min(num_steps / 10, n), end = std::max<int64_t>(0, n - 5);
  LrCurve c;
  for (int64_t i = begin; i < end; ++i) {
    if (!std::isfinite(smoothed[static_cast<size_t>(i)])) break;
    c.lrs.push_back(lrs[static_cast<size_t>(i)]);
    c.losses.push_back(smoothed[static_cast<size_t>(i)]);
  }
  return c;
}

double suggest_valley(const LrCurve& c, int64_t* index) {
  const int64_t n = static_cast<int64_t>(c.losses.size());
  KG_ASSERT(n >= 1, "suggest_valley on an empty curve");
  // fastai valley: lds[i] = the longest strictly decreasing subsequence ending at i.
  std::vector<int64_t> lds(static_cast<size_t>(n), 1);
  int64_t max_start = 0, max_end = 0;
  for (int64_t i = 1; i < n; ++i)
    for (int64_t j = 0; j < i; ++j) {
      auto ui = static_cast<size_t>(i), uj = static_cast<size_t>(j);
      if (c.losses[ui] < c.losses[uj] && lds[ui] < lds[uj] + 1) lds[ui] = lds[uj] + 1;
      if (lds[static_cast<size_t>(max_end)] < lds[ui]) {
        max_end = i;
        max_start = max_end - lds[static_cast<size_t>(max_end)];
      }
    }
  const double sections = static_cast<double>(max_end - max_start) / 3.0;
  int64_t idx = max_start + static_cast<int64_t>(sections) + static_cast<int64_t>(sections / 2);
  if (idx < 0) idx += n;  // Python indexing (a curve of two falling points gives -1: the last)
  if (index) *index = idx;
  return c.lrs[static_cast<size_t>(idx)];
}

std::optional<double> suggest_slide(const LrCurve& c, int64_t lr_diff, double thresh, double adjust_value) {
  const int64_t n = static_cast<int64_t>(c.losses.size());
  if (n < std::max<int64_t>(2, lr_diff + 1)) return std::nullopt;  // fastai indexes lrs[-(lr_diff + 1)]
  // np.gradient (unit spacing, first-order edges).
  std::vector<double> g(static_cast<size_t>(n));
  g[0] = c.losses[1] - c.losses[0];
  g[static_cast<size_t>(n - 1)] = c.losses[static_cast<size_t>(n - 1)] - c.losses[static_cast<size_t>(n - 2)];
  for (int64_t i = 1; i + 1 < n; ++i)
    g[static_cast<size_t>(i)] = (c.losses[static_cast<size_t>(i + 1)] - c.losses[static_cast<size_t>(i - 1)]) / 2.0;
  int64_t r = n - 1, l = r - lr_diff;
  double local_min_lr = c.lrs[static_cast<size_t>(l)];
  while (l >= 0 && std::abs(g[static_cast<size_t>(r)] - g[static_cast<size_t>(l)]) > thresh) {
    local_min_lr = c.lrs[static_cast<size_t>(l)];
    --r;
    --l;
  }
  return local_min_lr * adjust_value;
}

double suggest_minimum(const LrCurve& c) {
  KG_ASSERT(!c.losses.empty(), "suggest_minimum on an empty curve");
  auto it = std::min_element(c.losses.begin(), c.losses.end());
  return c.lrs[static_cast<size_t>(it - c.losses.begin())] / 10.0;
}

double suggest_steep(const LrCurve& c) {
  const size_t n = c.losses.size();
  KG_ASSERT(n >= 2, "suggest_steep needs two points");
  size_t best = 0;
  double best_g = 0;
  for (size_t i = 0; i + 1 < n; ++i) {
    double g = (c.losses[i + 1] - c.losses[i]) / (std::log(c.lrs[i + 1]) - std::log(c.lrs[i]));
    if (i == 0 || g < best_g) {
      best_g = g;
      best = i;
    }
  }
  return c.lrs[best];
}

const std::vector<std::string>& suggestion_names() {
  static const std::vector<std::string> names{"valley", "slide", "minimum", "steep"};
  return names;
}

void suggest(LrFindResult& r) {
  const auto& o = r.options;
  LrCurve c = suggestion_curve(r.lrs, r.smoothed, o.num_steps);
  const int64_t n = static_cast<int64_t>(c.losses.size());
  KG_CHECK(n >= 2, ConfigError, "lr_find: ", r.steps(), " update(s) recorded, ", n,
           " point(s) left for the suggestions after dropping the first num_steps/10 = ", o.num_steps / 10,
           " and the last 5 (and any after a non-finite loss); they need at least 2. ",
           r.stopped_early ? "The loss diverged almost immediately (" + r.stop_reason +
                                 "): lower lr_find.start_lr, or set lr_find.stop_div = false"
                           : "lr_find.num_steps = " + std::to_string(o.num_steps) + " is too small: raise it");
  r.suggestions.clear();
  r.suggestions["valley"] = suggest_valley(c);
  r.suggestions["slide"] = suggest_slide(c);
  r.suggestions["minimum"] = suggest_minimum(c);
  r.suggestions["steep"] = suggest_steep(c);
  r.chosen = o.suggestion;
  r.notes.clear();
  if (!r.suggestions["slide"])
    r.notes.push_back("slide needs at least 16 points after trimming, the sweep left " + std::to_string(n) +
                      ": raise lr_find.num_steps");
  const auto& chosen = r.suggestions.at(r.chosen);
  KG_CHECK(chosen.has_value(), ConfigError, "lr_find.suggestion = \"", r.chosen,
           "\" cannot be computed: ", r.notes.back(), ", or choose valley, minimum or steep");
  r.lr = *chosen;
  double lo = INFINITY, hi = 0;
  for (auto& [name, v] : r.suggestions)
    if (v) lo = std::min(lo, *v), hi = std::max(hi, *v);
  if (hi > 10 * lo)
    r.notes.push_back("the suggestions disagree by more than 10x (" + num(lo) + " to " + num(hi) +
                      "): look at lr_find.png before trusting one");
}

nlohmann::json LrFindResult::to_json() const {
  nlohmann::json s = nlohmann::json::object();
  for (auto& name : suggestion_names()) {
    auto it = suggestions.find(name);
    s[name] = it != suggestions.end() && it->second ? nlohmann::json(*it->second) : nlohmann::json();
  }
  return {{"schema_version", 1},
          {"suggestions", s},
          {"chosen", chosen},
          {"lr", lr},
          {"steps", steps()},
          {"stopped_early", stopped_early},
          {"stop_reason", stop_reason},
          {"notes", notes},
          {"start_lr", options.start_lr},
          {"end_lr", options.end_lr},
          {"num_steps", options.num_steps},
          {"beta", options.beta},
          {"seconds", seconds},
          {"seconds_per_update", steps() > 0 ? seconds / static_cast<double>(steps()) : 0.0}};
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
      r.stop_reason = "smoothed loss " + num(s) + " > " + num(o.div_factor) + " x best " + num(best) + " at update " +
                      std::to_string(i + 1);
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

bool is_norm_module(const std::string& type_name) { return type_name.find("Norm") != std::string::npos; }

// fit's first epoch: the plan's frozen layer groups (normalization layers stay trainable with
// train.train_bn) and its layer-group multipliers (fine_tune), as Trainer::apply_plan_for_epoch(0) does.
void apply_first_epoch(model::Network& net, optim::Optimizer& opt, const config::Tree& recipe,
                       const TrainOptions& topt) {
  const auto names = net.group_names();
  // Only epoch 0's freezing and multipliers are read: any number of updates per epoch will do, as long
  // as schedules that need several (one_cycle) can be built.
  Plan plan(
      recipe, topt.epochs, [](int64_t, int64_t) { return int64_t{1000}; }, names);
  const int64_t frozen = plan.frozen_groups(0);
  if (frozen > 0) {
    std::unordered_set<const void*> norm, frozen_set;
    for (auto& m : net.modules(/*include_self=*/false))
      if (is_norm_module(m->name()))
        for (auto& t : m->parameters(/*recurse=*/false)) norm.insert(t.unsafeGetTensorImpl());
    auto groups = net.layer_groups();
    for (int64_t g = 0; g < frozen && g < static_cast<int64_t>(groups.size()); ++g)
      for (auto& [name, t] : groups[static_cast<size_t>(g)].params) frozen_set.insert(t.unsafeGetTensorImpl());
    for (auto& t : net.parameters()) {
      const void* key = t.unsafeGetTensorImpl();
      const bool freeze = frozen_set.count(key) && !(topt.train_bn && norm.count(key));
      t.set_requires_grad(!freeze);
    }
  }
  if (const auto* mults = plan.group_lr_mult(0)) {
    auto& groups = opt.groups();
    for (size_t j = 0; j < groups.size(); ++j) {
      std::string lg = groups[j].name.substr(0, groups[j].name.find('/'));
      auto it = std::find(names.begin(), names.end(), lg);
      KG_CHECK(it != names.end(), InternalError, "optimizer group ", groups[j].name, " names no layer group");
      opt.set_lr_mult(j, (*mults)[static_cast<size_t>(it - names.begin())]);
    }
  }
}

// train.clip_grad_value, train.agc, then train.clip_grad_norm, in the trainer's order.
void clip_gradients(const std::vector<at::Tensor>& params, const TrainOptions& topt) {
  torch::NoGradGuard ng;
  if (topt.clip_grad_value > 0)
    for (auto& p : params)
      if (p.grad().defined()) p.grad().clamp_(-topt.clip_grad_value, topt.clip_grad_value);
  if (topt.agc > 0)
    for (auto p : params) {
      if (!p.grad().defined()) continue;
      std::vector<int64_t> dims;
      for (int64_t d = 1; d < p.dim(); ++d) dims.push_back(d);
      auto unit_norm = [&](const at::Tensor& t) {
        return p.dim() <= 1 ? t.norm(2) : t.norm(2, dims, /*keepdim=*/true);
      };
      auto max_norm = unit_norm(p.detach()).clamp_min(1e-3) * topt.agc;
      auto gnorm = unit_norm(p.grad());
      auto clipped = p.grad() * (max_norm / gnorm.clamp_min(1e-6));
      p.mutable_grad() = torch::where(gnorm < max_norm, p.grad(), clipped);
    }
  if (topt.clip_grad_norm > 0) {
    std::vector<at::Tensor> norms;
    for (auto& p : params)
      if (p.grad().defined()) norms.push_back(p.grad().norm(2));
    if (norms.empty()) return;
    double total = torch::stack(norms).norm(2).item<double>();
    if (std::isfinite(total) && total > topt.clip_grad_norm) {
      double coef = topt.clip_grad_norm / (total + 1e-6);
      for (auto& p : params)
        if (p.grad().defined()) p.grad().mul_(coef);
    }
  }
}

}  // namespace

std::unique_ptr<BatchSource> loader_source(std::unique_ptr<data::Loader> loader) {
  return std::make_unique<LoaderSource>(std::move(loader));
}

LrFindResult find_lr(const LrFindOptions& o, const FinderParts& p) {
  KG_ASSERT(p.net && p.recipe && p.loss && p.batches, "find_lr: incomplete parts");
  auto& net = *p.net;
  const auto topt = load_train_options(*p.recipe);
  // optim.lr = "find" has no value yet: any number builds the optimizer (set_lr overrides it every update);
  // a [lo, hi] slice keeps its per-group multipliers.
  config::Tree recipe = *p.recipe;
  {
    const config::Entry* e = recipe.find("optim.lr");
    if (e && e->value.is_string()) {
      config::Entry d = *e;
      d.value = 1.0;
      recipe.set("optim.lr", d);
    }
  }
  NetworkState saved(net);
  auto opt = optim::build(recipe, net);
  apply_first_epoch(net, *opt, recipe, topt);
  const auto params = net.parameters();
  net.train();

  const int64_t accum = topt.accum_steps;
  device::LossScaler scaler = p.scaler;
  int64_t epoch = 0;
  std::unique_ptr<BatchSource> src;
  auto open_epoch = [&](int64_t e) {
    src = p.batches(e);
    KG_CHECK(src && src->size() > 0, DataError, "lr finder: epoch ", e,
             " of the training rows makes no micro-batch of ",
             "train.batch_size (the rows are fewer than one batch); lower train.batch_size");
  };
  open_epoch(0);
  auto update = [&](int64_t, double lr) -> double {
    opt->set_lr(lr);
    opt->zero_grad();
    data::Batch b;
    if (!src->next(b)) {
      open_epoch(++epoch);
      KG_CHECK(src->next(b), InternalError, "lr finder: a new epoch yielded no batch");
    }
    const int64_t n = src->size();
    const int64_t group_size = std::min<int64_t>(accum, n - b.index);  // fit's groups: what is left of the epoch
    at::Tensor group_loss = torch::zeros({}, torch::TensorOptions().device(p.device));
    for (int64_t m = 0; m < group_size; ++m) {
      if (m > 0) KG_CHECK(src->next(b), InternalError, "lr finder: the epoch ended inside an accumulation group");
      auto x = data::to_model_input(b, p.device);
      auto y = b.targets.to(p.device, /*non_blocking=*/true);
      if (p.mix) p.mix(x, y, epoch, b.index);
      at::Tensor f = b.features.defined() ? b.features.to(p.device, /*non_blocking=*/true) : at::Tensor();
      at::Tensor out;
      {
        device::AutocastScope autocast(p.precision, p.device.type());
        out = net.forward(x, f);
      }
      auto l = p.loss->forward(out.to(torch::kFloat), y);
      if (scaler.enabled())
        (l * (scaler.scale() / static_cast<double>(group_size))).backward();
      else
        (l / static_cast<double>(group_size)).backward();
      group_loss += l.detach();
    }
    const double loss = group_loss.item<double>() / static_cast<double>(group_size);
    if (!std::isfinite(loss)) return loss;
    if (scaler.enabled()) {
      // fp16: unscale; an overflow from the scale skips this update (the loss is still recorded).
      std::vector<at::Tensor> grads;
      for (auto& t : params)
        if (t.grad().defined()) grads.push_back(t.grad());
      const bool ok = scaler.unscale_and_check(grads);
      scaler.update(ok);
      if (!ok) return loss;
    }
    clip_gradients(params, topt);
    opt->step();
    return loss;
  };
  auto r = sweep(o, update, p.progress);
  opt->zero_grad();
  return r;
}

}  // namespace kg::train
