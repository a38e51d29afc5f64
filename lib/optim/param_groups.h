// The [optim] section's shared keys and the parameter groups they make: one group per (model layer group
// x decay / no decay), each with its lr multiplier (fastai's lr slice, explicit multipliers or timm's
// layer decay) and weight decay (timm's filter_bias_and_bn: none on biases and norm weights).
#pragma once
#include <string>
#include <variant>
#include <vector>

#include <ATen/core/Tensor.h>

#include "config/recipe.h"

namespace kg::model {
class Network;
}

namespace kg::optim {

// optim.lr, a key of three forms: one number; fastai's slice [lo, hi], spread geometrically over the layer groups;
// or "find", which fit and lr-find resolve with the lr finder before anything trains (Recipe::resolved).
struct LearningRate {
  struct Slice {
    double lo = 0, hi = 0;
  };
  struct Find {};
  static constexpr config::Type kRecipeType = config::Type::Any;
  static std::string check(const config::json& v);  // "" for a valid form, else "expected ..."
  LearningRate(double lr = 1e-3) : form(lr) {}      // NOLINT(google-explicit-constructor): a number is an lr
  std::variant<double, Slice, Find> form;
  bool is_find() const { return std::holds_alternative<Find>(form); }
  const Slice* slice() const { return std::get_if<Slice>(&form); }
  std::string str() const;  // as the recipe spells it: 0.001, [1e-05, 0.001], "find"
};
void from_json(const config::json& j, LearningRate& lr);
void to_json(config::json& j, const LearningRate& lr);

// Recipe section [optim]; each field's doc is in param_groups_fields() (optim/param_groups.cpp) and docs/reference.md.
struct OptimOptions {
  static OptimOptions load(const config::Tree& recipe);  // recipe.get<OptimOptions>() decodes it once
  std::string name = "adamw";
  LearningRate lr;
  double weight_decay = 0.01;
  bool decay_norm_bias = false;
  std::vector<double> group_lr_mult;
  double layer_decay = 0;
};
// optim.lr = "find" in `recipe`.
bool lr_is_find(const config::Recipe& recipe);
// `recipe` with optim.lr resolved to `lr` (its origin kept), validated again.
config::Recipe with_lr(const config::Recipe& recipe, double lr);
// optim.lr = "find" has no value yet: `recipe` with any number there (1.0), which builds the same optimizer and its
// state (set_lr overrides it every update); any other recipe as it is.
config::Recipe with_numeric_lr(const config::Recipe& recipe);
// The schedule's peak learning rate: the largest of optim.lr's values. ConfigError for "find".
double peak_lr(const OptimOptions& o);

struct ParamGroup {
  std::string name;  // "<layer group>" or "<layer group>/no_decay"
  std::vector<at::Tensor> params;
  std::vector<std::string> names;  // the parameters' state-dict names (same order): keys of the optimizer state
  double lr_mult = 1.0;            // group lr = schedule lr * lr_mult
  double weight_decay = 0.0;
};

// One lr multiplier per layer group (stem first), from optim.lr = [lo, hi] (fastai even_mults / hi),
// optim.group_lr_mult or optim.layer_decay; all 1 when none is set. ConfigError when more than one is
// set or group_lr_mult has the wrong length (the message names the groups).
std::vector<double> layer_group_mults(const OptimOptions& o, const std::vector<std::string>& group_names);

// One ParamGroup per (layer group x decay / no_decay), layer-group order, empty groups left out. Every
// parameter appears exactly once, also those with requires_grad = false (frozen now, unfrozen later).
std::vector<ParamGroup> build_param_groups(const model::Network& net, const OptimOptions& o);

}  // namespace kg::optim
