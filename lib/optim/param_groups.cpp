#include "optim/param_groups.h"

#include <algorithm>
#include <cmath>

#include "config/sections.h"
#include "core/error.h"
#include "core/strings.h"
#include "model/model.h"

namespace kg::optim {
namespace {

bool is_number(const config::json& v) { return v.is_number_integer() || v.is_number_float(); }

config::Fields<OptimOptions> param_groups_fields() {
  config::Fields<OptimOptions> f;
  f.field("name", &OptimOptions::name, "optimizer").kind("optimizer");
  f.field("lr", &OptimOptions::lr,
          "peak learning rate, a number (the schedule scales it); [lo, hi] spreads it geometrically over the "
          "layer groups (fastai's slice: stem lo, head hi); \"find\" is resolved by the lr finder");
  f.field("weight_decay", &OptimOptions::weight_decay,
          "weight decay (decoupled for adamw/radam/lamb, L2 for sgd/adam/rmsprop)")
      .min(0);
  f.field("decay_norm_bias", &OptimOptions::decay_norm_bias,
          "also decay biases and normalization weights, every param with dim <= 1 (timm/fastai: false)");
  f.field("group_lr_mult", &OptimOptions::group_lr_mult, "lr multiplier per layer group, stem first ([] = all 1)")
      .positive();
  f.field("layer_decay", &OptimOptions::layer_decay,
          "timm layer-wise lr decay: layer group i of n gets lr * layer_decay^(n-1-i) (0 = off)")
      .range(0, 1);
  return f;
}
KG_REGISTER_SECTION("optim", "the optimizer", param_groups_fields().schema(), "optimizer");

[[noreturn]] void lr_is_find() {
  throw ConfigError("optim.lr = \"find\" is resolved by fit/lr-find before the optimizer is built; give a number here");
}

}  // namespace

OptimOptions OptimOptions::load(const config::Tree& recipe) {
  return param_groups_fields().load(config::Options(&recipe, "optim"));
}

std::string LearningRate::check(const config::json& v) {
  if (is_number(v)) return v.get<double>() > 0 ? "" : "expected a number > 0, got " + v.dump();
  if (v.is_string() && v.get<std::string>() == "find") return "";
  if (v.is_array() && v.size() == 2 && is_number(v[0]) && is_number(v[1])) {
    double lo = v[0].get<double>(), hi = v[1].get<double>();
    if (lo > 0 && lo <= hi) return "";
  }
  return "expected a number > 0, [lo, hi] with 0 < lo <= hi (fastai's lr slice) or \"find\", got " + v.dump();
}

void from_json(const config::json& j, LearningRate& lr) {
  if (j.is_string())
    lr.form = LearningRate::Find{};
  else if (j.is_array())
    lr.form = LearningRate::Slice{j[0].get<double>(), j[1].get<double>()};
  else
    lr.form = j.get<double>();
}

void to_json(config::json& j, const LearningRate& lr) {
  if (lr.is_find())
    j = "find";
  else if (const auto* s = lr.slice())
    j = config::json::array({s->lo, s->hi});
  else
    j = std::get<double>(lr.form);
}

std::string LearningRate::str() const { return config::json(*this).dump(); }

double peak_lr(const OptimOptions& o) {
  if (o.lr.is_find()) lr_is_find();
  if (const auto* s = o.lr.slice()) return s->hi;
  return std::get<double>(o.lr.form);
}

std::vector<double> layer_group_mults(const OptimOptions& o, const std::vector<std::string>& group_names) {
  const size_t n = group_names.size();
  const bool slice = o.lr.slice() != nullptr, explicit_mults = !o.group_lr_mult.empty(), decay = o.layer_decay != 0;
  if (slice + explicit_mults + decay > 1) {
    std::vector<std::string> set;
    if (slice) set.push_back("lr = " + o.lr.str());
    if (explicit_mults) set.push_back("group_lr_mult");
    if (decay) set.push_back("layer_decay");
    throw ConfigError(
        "optim.lr = [lo, hi], optim.group_lr_mult and optim.layer_decay each set per-group learning rates: "
        "use one of them (set: " +
        join(set, ", ") + ")");
  }
  std::vector<double> m(n, 1.0);
  if (slice) {
    // fastai even_mults(lo, hi, n): lo * (hi/lo)^(i/(n-1)); the schedule's peak is hi, so divide by it.
    const double lo = o.lr.slice()->lo, hi = o.lr.slice()->hi;
    for (size_t i = 0; i < n; ++i)
      m[i] = n == 1 ? 1.0 : lo * std::pow(hi / lo, static_cast<double>(i) / static_cast<double>(n - 1)) / hi;
  } else if (explicit_mults) {
    KG_CHECK(o.group_lr_mult.size() == n, ConfigError, "optim.group_lr_mult has ", o.group_lr_mult.size(),
             " values but the model has ", n, " layer groups (", join(group_names, ", "),
             "): give one multiplier per group");
    m = o.group_lr_mult;
  } else if (decay) {
    for (size_t i = 0; i < n; ++i) m[i] = std::pow(o.layer_decay, static_cast<double>(n - 1 - i));
  }
  return m;
}

std::vector<ParamGroup> build_param_groups(const model::Network& net, const OptimOptions& o) {
  const auto layer_groups = net.layer_groups();
  std::vector<std::string> names;
  for (auto& lg : layer_groups) names.push_back(lg.name);
  const auto mults = layer_group_mults(o, names);
  std::vector<ParamGroup> out;
  for (size_t i = 0; i < layer_groups.size(); ++i) {
    ParamGroup decay{layer_groups[i].name, {}, {}, mults[i], o.weight_decay};
    ParamGroup no_decay{layer_groups[i].name + "/no_decay", {}, {}, mults[i], 0.0};
    for (auto& [name, t] : layer_groups[i].params) {
      // timm's param_groups_weight_decay: every parameter with dim <= 1 is a bias or a norm scale/shift; the model's
      // no_weight_decay() names (ViT's pos_embed, cls_token) join them.
      auto& dst = o.decay_norm_bias || (t.dim() > 1 && !net.skips_weight_decay(name)) ? decay : no_decay;
      dst.params.push_back(t);
      dst.names.push_back(name);
    }
    if (!decay.params.empty()) out.push_back(std::move(decay));
    if (!no_decay.params.empty()) out.push_back(std::move(no_decay));
  }
  return out;
}

bool lr_is_find(const config::Recipe& recipe) { return recipe.get<OptimOptions>().lr.is_find(); }

config::Recipe with_lr(const config::Recipe& recipe, double lr) { return recipe.resolved("optim.lr", lr); }

config::Recipe with_numeric_lr(const config::Recipe& recipe) {
  return lr_is_find(recipe) ? with_lr(recipe, 1.0) : recipe;
}

}  // namespace kg::optim
