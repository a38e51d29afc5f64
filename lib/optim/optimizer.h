// Optimizers: kgtrain's own implementations (PyTorch's update rules, step for step) over parameter
// groups with per-group lr multipliers and weight decay, and state that checkpoints and restores exactly.
//
// Checkpoint layout (save_state / load_state, prefix "optim." by default):
//   tensors  "<prefix><param name>.<slot>", e.g. "optim.layer1.0.conv1.weight.exp_avg"; every slot is
//            shaped like its parameter (exp_avg, exp_avg_sq, max_exp_avg_sq, momentum_buffer,
//            square_avg, grad_avg; lookahead's slow)
//   meta["<prefix without its trailing dot>"] = {
//     "name": "adamw", "lr": 0.001, "momentum": 0.9 (or null),
//     "params": {"<param name>": {"step": 12, "slots": ["exp_avg", "exp_avg_sq"]}, ...},
//     ...optimizer scalars (lookahead: "counter") }
//   A parameter that never had a gradient has no entry and no tensors. Lookahead saves its inner
//   optimizer with the prefix "<prefix>inner." (meta key "optim.inner").
#pragma once
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <ATen/core/Tensor.h>

#include "config/registry.h"
#include "config/recipe.h"
#include "model/weights/safetensors.h"
#include "optim/param_groups.h"

namespace kg::optim {

// One parameter's optimizer state: its update count (PyTorch's per-parameter `step`, used for bias
// correction) and its slot tensors.
struct ParamState {
  int64_t step = 0;
  std::map<std::string, at::Tensor> slots;
  bool empty() const { return step == 0 && slots.empty(); }
};

class Optimizer {
 public:
  explicit Optimizer(std::vector<ParamGroup> groups);
  virtual ~Optimizer();
  Optimizer(const Optimizer&) = delete;
  Optimizer& operator=(const Optimizer&) = delete;

  // The schedule's lr; each group steps with lr * lr_mult.
  virtual void set_lr(double lr);
  double lr() const { return lr_; }
  // Changes groups()[group].lr_mult (a plan phase's multipliers, fine_tune's lr slice after unfreezing).
  virtual void set_lr_mult(size_t group, double mult);
  // SGD/RMSprop momentum or the Adam family's beta1 (one_cycle cycles it). An optimizer built with
  // momentum 0 has none to cycle (fastai): the value is ignored and momentum() is empty.
  virtual void set_momentum(double m);
  virtual std::optional<double> momentum() const;

  // Under NoGradGuard: every parameter with a defined gradient gets one update. Parameters without
  // one are skipped entirely (no decay, no state change): frozen layers stay bit-identical.
  virtual void step();
  void zero_grad();  // set_to_none: the next backward writes fresh gradients
  // Lookahead: pulls the slow weights toward the fast ones and resets the fast ones to them (timm's
  // sync_lookahead). Called before every evaluation (checkpoints use synced_view); a no-op elsewhere.
  virtual void sync() {}
  // The weights an evaluation would see after sync(), written over `weights` (state-dict names) without
  // changing any state: checkpoints store them, so saving never alters training (exact resume).
  virtual void synced_view(model::TensorMap& weights) const {}

  // The layout is described at the top of this file. Tensors are copies (a snapshot, not live state).
  virtual void save_state(model::TensorMap& tensors, config::json& meta, const std::string& prefix = "optim.") const;
  // Restores exactly: subsequent steps are bit-identical to an uninterrupted run. CheckpointError when
  // the saved optimizer, a parameter name, a slot or a shape does not match.
  virtual void load_state(const model::TensorMap& tensors, const config::json& meta,
                          const std::string& prefix = "optim.");

  const std::vector<ParamGroup>& groups() const { return groups_; }
  const std::string& name() const { return name_; }
  // One line for the log: "adamw lr 0.001, wd 0.01 (no decay on 42 bias/norm tensors), 5 groups x [0.01, ..., 1]".
  virtual std::string describe() const;
  // How many tensors the size of a parameter it keeps per parameter (AdamW 2; SGD with momentum 1, without 0;
  // Lookahead its inner optimizer's + 1): the training-memory estimate of fit's and show's model line.
  virtual int64_t state_slots() const { return 2; }
  // The state kept for a parameter by its name; nullptr when it has none (it never had a gradient).
  const ParamState* state_of(const std::string& param) const;

 protected:
  struct StepArgs {
    double lr;            // schedule lr * group lr_mult
    double weight_decay;  // the group's
  };
  // One parameter's update; `grad` is defined and `s.step` already counts this update.
  virtual void update(const at::Tensor& p, const at::Tensor& grad, ParamState& s, const StepArgs& a) = 0;
  struct Item {
    const at::Tensor* p;
    const at::Tensor* grad;
    ParamState* s;
  };
  // One group's updates of this step, in parameter order (each s->step already counted). The default
  // calls update() per parameter; an optimizer may do them together instead (multi-tensor kernels: on
  // CUDA a handful of launches for the whole group instead of several per parameter).
  virtual void update_group(const std::vector<Item>& items, const StepArgs& a);
  // What one set of multi-tensor kernels can update: items of one device, parameter dtype and gradient
  // dtype (and update count, with `by_step`), in parameter order. On the CPU a bucket holds at most
  // kCpuBucketNumel elements (a larger tensor is a bucket of its own): LibTorch runs a foreach op tensor by
  // tensor, so a bucket's ~8 passes then stay in the cache, where over a whole model each pass reads it from memory
  // (ViT-B's AdamW step: 0.145 s against 0.172 s on 2 cores). Elementwise: no bit changes.
  static constexpr int64_t kCpuBucketNumel = int64_t{1} << 20;
  struct Bucket {
    std::vector<at::Tensor> ps, gs;
    std::vector<ParamState*> states;
    int64_t step = 0;  // with by_step: the members' update count
  };
  static std::vector<Bucket> buckets_of(const std::vector<Item>& items, bool by_step);
  // Scalars beyond lr, momentum and per-parameter state (lookahead's counter).
  virtual void save_extra(config::json& /*meta*/) const {}
  virtual void load_extra(const config::json& /*meta*/) {}
  // A slot of `s`, created as zeros shaped like `p` on first use.
  static at::Tensor& slot(ParamState& s, const char* name, const at::Tensor& p);
  // The bucket's `name` slots (slot() of each member), in parameter order: a multi-tensor kernel's operand.
  static std::vector<at::Tensor> slots(Bucket& b, const char* name);
  ParamState& state_at(size_t group, size_t index) { return state_[group][index]; }

  std::string name_ = "optimizer";  // the registry name, set by each implementation
  std::optional<double> momentum_;  // current momentum / beta1; empty when the optimizer has none

 private:
  std::vector<ParamGroup> groups_;
  std::vector<std::vector<ParamState>> state_;  // parallel to groups_[g].params
  double lr_ = 1e-3;
};
using OptimizerPtr = std::unique_ptr<Optimizer>;

// An optimizer whose rule updates a whole Bucket at once with multi-tensor (foreach) kernels — PyTorch's
// default on CUDA: a handful of launches per group instead of several per parameter. A single parameter
// is a bucket of one. On the CPU LibTorch runs foreach ops tensor by tensor, so grouping changes no bit.
class MultiTensorOptimizer : public Optimizer {
 protected:
  // `by_step`: buckets also split by update count (rules with bias correction).
  MultiTensorOptimizer(std::vector<ParamGroup> groups, bool by_step)
      : Optimizer(std::move(groups)), by_step_(by_step) {}
  // One update of the bucket's parameters (each state's step already counts it).
  virtual void update_bucket(Bucket& b, const StepArgs& a) = 0;
  void update(const at::Tensor& p, const at::Tensor& grad, ParamState& s, const StepArgs& a) final;
  void update_group(const std::vector<Item>& items, const StepArgs& a) final;

 private:
  bool by_step_;
};

// What a factory gets besides its options: the groups, and the recipe and key prefix for wrappers that
// build a nested optimizer (lookahead: optimizer_registry().create(name, recipe->section(prefix + ".inner"), ...)).
struct OptimContext {
  std::vector<ParamGroup> groups;
  const config::Recipe* recipe = nullptr;
  std::string prefix = "optim";
};
using OptimizerRegistry = Registry<OptimizerPtr(const OptimContext&)>;
OptimizerRegistry& optimizer_registry();

// The recipe's optimizer over the network's parameter groups (build_param_groups), lr set to the peak.
OptimizerPtr build(const config::Recipe& recipe, const model::Network& net);
// For tests and other tools: an optimizer over explicit groups (names unique across groups).
OptimizerPtr build(const config::Recipe& recipe, std::vector<ParamGroup> groups);

}  // namespace kg::optim
