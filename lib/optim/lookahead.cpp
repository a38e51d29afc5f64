// Lookahead (Zhang, Lucas, Hinton & Ba 2019, "Lookahead Optimizer: k steps forward, 1 step back") around
// any inner optimizer, and Ranger = Lookahead(RAdam) (Wright 2019). Every k inner steps the slow weights
// move toward the fast ones (slow += alpha * (fast - slow)) and the fast weights restart from them.
// A parameter's slow copy is taken just before its first update, which equals the weights at
// construction for every parameter the optimizer trains, while frozen parameters keep no state.
#include <iomanip>
#include <sstream>

#include <torch/torch.h>

#include "core/error.h"
#include "optim/optimizer.h"

namespace kg::optim {
namespace {

class Lookahead : public Optimizer {
 public:
  Lookahead(OptimizerPtr inner, const OptimContext& ctx, int64_t k, double alpha, std::string name)
      : Optimizer(ctx.groups), inner_(std::move(inner)), k_(k), alpha_(alpha) {
    name_ = std::move(name);
  }

  void set_lr(double lr) override {
    Optimizer::set_lr(lr);
    inner_->set_lr(lr);
  }
  void set_lr_mult(size_t group, double mult) override {
    Optimizer::set_lr_mult(group, mult);
    inner_->set_lr_mult(group, mult);
  }
  void set_momentum(double m) override { inner_->set_momentum(m); }
  std::optional<double> momentum() const override { return inner_->momentum(); }
  int64_t state_slots() const override { return inner_->state_slots() + 1; }  // + the slow weights

  void step() override {
    {
      torch::NoGradGuard no_grad;
      for (size_t g = 0; g < groups().size(); ++g)
        for (size_t i = 0; i < groups()[g].params.size(); ++i) {
          const at::Tensor& p = groups()[g].params[i];
          ParamState& s = state_at(g, i);
          if (p.grad().defined() && !s.slots.count("slow")) s.slots.emplace("slow", p.detach().clone());
        }
    }
    inner_->step();
    if (++counter_ % k_ == 0) update_slow();
  }

  // timm's sync_lookahead: the evaluated / saved weights are the slow ones.
  void sync() override { update_slow(); }

  void synced_view(model::TensorMap& weights) const override {
    torch::NoGradGuard no_grad;
    for_each_slow([&](const std::string& name, const at::Tensor& p, const at::Tensor& slow) {
      weights[name] = (slow + (p.detach() - slow) * alpha_).to(torch::kCPU);
    });
  }

  // Besides the slow weights (slots), the fast weights: a checkpoint's model.safetensors holds the
  // synced view, and resume puts the fast weights back so training continues exactly.
  void save_state(model::TensorMap& tensors, config::json& meta, const std::string& prefix) const override {
    Optimizer::save_state(tensors, meta, prefix);
    inner_->save_state(tensors, meta, prefix + "inner.");
    for_each_slow([&](const std::string& name, const at::Tensor& p, const at::Tensor&) {
      tensors[prefix + "fast." + name] = p.detach().to(torch::kCPU).clone();
    });
  }
  void load_state(const model::TensorMap& tensors, const config::json& meta, const std::string& prefix) override {
    inner_->load_state(tensors, meta, prefix + "inner.");
    Optimizer::load_state(tensors, meta, prefix);
    torch::NoGradGuard no_grad;
    for_each_slow([&](const std::string& name, const at::Tensor& p, const at::Tensor&) {
      auto it = tensors.find(prefix + "fast." + name);
      KG_CHECK(it != tensors.end(), CheckpointError, "checkpoint has lookahead slow weights but no fast weights for ",
               name, " (", prefix, "fast.", name, ")");
      KG_CHECK(it->second.sizes() == p.sizes(), CheckpointError, "lookahead fast weights ", name, " have shape ",
               it->second.sizes(), ", the model's is ", p.sizes());
      p.copy_(it->second);
    });
  }

  std::string describe() const override {
    std::ostringstream os;
    os << name_ << " (k " << k_ << ", alpha " << std::setprecision(3) << alpha_ << ") over " << inner_->describe();
    return os.str();
  }

 protected:
  void update(const at::Tensor&, const at::Tensor&, ParamState&, const StepArgs&) override {
    KG_ASSERT(false, "lookahead steps through its inner optimizer");
  }
  void save_extra(config::json& meta) const override {
    meta["counter"] = counter_;
    meta["k"] = k_;
  }
  void load_extra(const config::json& meta) override { counter_ = meta.at("counter").get<int64_t>(); }

 private:
  void update_slow() {
    torch::NoGradGuard no_grad;
    for (size_t g = 0; g < groups().size(); ++g)
      for (size_t i = 0; i < groups()[g].params.size(); ++i) {
        const at::Tensor& p = groups()[g].params[i];
        auto it = state_at(g, i).slots.find("slow");
        if (it == state_at(g, i).slots.end() || !p.requires_grad()) continue;  // never trained, or frozen now
        it->second.add_(p - it->second, alpha_);
        p.copy_(it->second);
      }
  }

  template <class F>
  void for_each_slow(F f) const {
    for (size_t g = 0; g < groups().size(); ++g)
      for (size_t i = 0; i < groups()[g].params.size(); ++i) {
        const at::Tensor& p = groups()[g].params[i];
        const auto* st = state_of(groups()[g].names[i]);
        if (!st) continue;
        auto it = st->slots.find("slow");
        if (it != st->slots.end() && p.requires_grad()) f(groups()[g].names[i], p, it->second);
      }
  }

  OptimizerPtr inner_;
  int64_t k_;
  double alpha_;
  int64_t counter_ = 0;  // inner steps taken
};

OptimizerPtr wrap(OptimizerPtr inner, const OptimContext& ctx, int64_t k, double alpha, const std::string& name) {
  KG_CHECK(!dynamic_cast<Lookahead*>(inner.get()), ConfigError, ctx.prefix, ".inner.name = \"", inner->name(),
           "\": ", name,
           " cannot wrap another lookahead optimizer; name the one it should wrap (adamw, radam, sgd, ...)");
  return std::make_unique<Lookahead>(std::move(inner), ctx, k, alpha, name);
}

// Keys of [optim] when name = "lookahead"; each field's doc is in lookahead_fields() below and docs/reference.md.
struct LookaheadOptions {
  int64_t k = 6;
  double alpha = 0.5;
  std::string inner_name = "adamw";
};

config::Fields<LookaheadOptions> lookahead_fields() {
  config::Fields<LookaheadOptions> f;
  f.field("k", &LookaheadOptions::k, "inner optimizer steps between slow-weight updates").min(1);
  f.field("alpha", &LookaheadOptions::alpha, "slow-weight step size: slow += alpha * (fast - slow)")
      .min(0, true)
      .max(1);
  f.field("inner.name", &LookaheadOptions::inner_name, "the wrapped optimizer; its own keys go in [optim.inner] too")
      .kind("optimizer");
  return f;
}

KG_REGISTER(
    optimizer_registry(), "lookahead", "Lookahead around the optimizer named in [optim.inner] (timm/fastai)",
    "[optim]\nname = \"lookahead\"\nlr = 1e-3\nk = 6\nalpha = 0.5\n\n[optim.inner]\nname = \"adamw\"\nbetas = [0.9, "
    "0.99]",
    lookahead_fields(), [](const LookaheadOptions& o, const OptimContext& ctx) -> OptimizerPtr {
      const std::string inner_prefix = ctx.prefix + ".inner";
      config::Options opts =
          ctx.recipe ? ctx.recipe->section(inner_prefix) : config::Options(config::json::object(), inner_prefix);
      auto inner = optimizer_registry().create(o.inner_name, opts, OptimContext{ctx.groups, ctx.recipe, inner_prefix});
      return wrap(std::move(inner), ctx, o.k, o.alpha, "lookahead");
    });

// Keys of [optim] when name = "ranger"; each field's doc is in ranger_fields() below and docs/reference.md.
struct RangerOptions {
  int64_t k = 6;
  double alpha = 0.5;
  std::vector<double> betas{0.95, 0.999};
  double eps = 1e-5;
  bool decoupled_weight_decay = true;
};

config::Fields<RangerOptions> ranger_fields() {
  config::Fields<RangerOptions> f;
  f.field("k", &RangerOptions::k, "RAdam steps between slow-weight updates").min(1);
  f.field("alpha", &RangerOptions::alpha, "slow-weight step size: slow += alpha * (fast - slow)").min(0, true).max(1);
  f.field("betas", &RangerOptions::betas, "RAdam's (beta1, beta2) (Ranger: 0.95, 0.999); beta1 is cycled by one_cycle")
      .size(2)
      .range(0, 1);
  f.field("eps", &RangerOptions::eps, "RAdam's term added to the denominator").positive();
  f.field("decoupled_weight_decay", &RangerOptions::decoupled_weight_decay,
          "decay the weights (AdamW-style); false = L2 added to the gradient");
  return f;
}

KG_REGISTER(
    optimizer_registry(), "ranger", "Ranger: Lookahead over RAdam in one table (Wright 2019; fastai ranger)",
    "[optim]\nname = \"ranger\"\nlr = 4e-3\nweight_decay = 0.01", ranger_fields(),
    [](const RangerOptions& o, const OptimContext& ctx) -> OptimizerPtr {
      config::json radam = {{"betas", o.betas}, {"eps", o.eps}, {"decoupled_weight_decay", o.decoupled_weight_decay}};
      auto inner = optimizer_registry().create("radam", config::Options(radam, ctx.prefix),
                                               OptimContext{ctx.groups, ctx.recipe, ctx.prefix + ".inner"});
      return wrap(std::move(inner), ctx, o.k, o.alpha, "ranger");
    });

}  // namespace
}  // namespace kg::optim
