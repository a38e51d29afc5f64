#include "optim/optimizer.h"

#include <algorithm>
#include <iomanip>
#include <set>
#include <sstream>
#include <tuple>

#include <torch/torch.h>

#include "core/error.h"
#include "core/strings.h"
#include "model/model.h"

namespace kg::optim {

OptimizerRegistry& optimizer_registry() {
  static OptimizerRegistry r("optimizer");
  return r;
}

namespace {
// "optim." -> "optim"; the meta key of an optimizer's scalars.
std::string meta_key(const std::string& prefix) {
  return !prefix.empty() && prefix.back() == '.' ? prefix.substr(0, prefix.size() - 1) : prefix;
}

std::string short_number(double v) {
  std::ostringstream os;
  os << std::setprecision(3) << v;
  return os.str();
}
}  // namespace

Optimizer::Optimizer(std::vector<ParamGroup> groups) : groups_(std::move(groups)) {
  std::set<std::string> seen;
  for (auto& g : groups_) {
    KG_ASSERT(g.params.size() == g.names.size(), "parameter group ", g.name, " has ", g.params.size(), " tensors but ",
              g.names.size(), " names");
    for (auto& n : g.names) KG_ASSERT(seen.insert(n).second, "parameter ", n, " is in two optimizer groups");
    state_.emplace_back(g.params.size());
  }
}

Optimizer::~Optimizer() = default;

void Optimizer::set_lr(double lr) { lr_ = lr; }

void Optimizer::set_lr_mult(size_t group, double mult) {
  KG_ASSERT(group < groups_.size(), "optimizer group ", group, " of ", groups_.size());
  groups_[group].lr_mult = mult;
}

void Optimizer::set_momentum(double m) {
  if (momentum_) momentum_ = m;
}

std::optional<double> Optimizer::momentum() const { return momentum_; }

void Optimizer::step() {
  torch::NoGradGuard no_grad;
  for (size_t g = 0; g < groups_.size(); ++g) {
    const StepArgs args{lr_ * groups_[g].lr_mult, groups_[g].weight_decay};
    std::vector<Item> items;
    items.reserve(groups_[g].params.size());
    for (size_t i = 0; i < groups_[g].params.size(); ++i) {
      const at::Tensor& p = groups_[g].params[i];
      if (!p.grad().defined()) continue;
      ParamState& s = state_[g][i];
      ++s.step;
      items.push_back({&p, &p.grad(), &s});
    }
    if (!items.empty()) update_group(items, args);
  }
}

void Optimizer::update_group(const std::vector<Item>& items, const StepArgs& a) {
  for (const auto& it : items) update(*it.p, *it.grad, *it.s, a);
}

std::vector<Optimizer::Bucket> Optimizer::buckets_of(const std::vector<Item>& items, bool by_step) {
  std::vector<Bucket> out;
  std::vector<std::tuple<int64_t, int, int, int, int>> keys;  // of each open bucket
  std::vector<size_t> open;                                   // the bucket each key fills now
  std::vector<int64_t> numel;                                 // elements in each bucket
  for (const auto& it : items) {
    const auto key = std::make_tuple(by_step ? it.s->step : int64_t{0}, static_cast<int>(it.p->device().type()),
                                     static_cast<int>(it.p->device().index()), static_cast<int>(it.p->scalar_type()),
                                     static_cast<int>(it.grad->scalar_type()));
    const size_t k = std::find(keys.begin(), keys.end(), key) - keys.begin();
    const bool full = k < keys.size() && it.p->is_cpu() && numel[open[k]] + it.p->numel() > kCpuBucketNumel;
    if (k == keys.size() || full) {
      if (k == keys.size()) {
        keys.push_back(key);
        open.push_back(0);
      }
      open[k] = out.size();
      out.emplace_back();
      out.back().step = std::get<0>(key);
      numel.push_back(0);
    }
    const size_t b = open[k];
    numel[b] += it.p->numel();
    out[b].ps.push_back(*it.p);
    out[b].gs.push_back(*it.grad);
    out[b].states.push_back(it.s);
  }
  return out;
}

void MultiTensorOptimizer::update(const at::Tensor& p, const at::Tensor& grad, ParamState& s, const StepArgs& a) {
  Bucket b{{p}, {grad}, {&s}, s.step};
  update_bucket(b, a);
}

void MultiTensorOptimizer::update_group(const std::vector<Item>& items, const StepArgs& a) {
  for (auto& b : buckets_of(items, by_step_)) update_bucket(b, a);
}

void Optimizer::zero_grad() {
  for (auto& g : groups_)
    for (auto& p : g.params)
      if (p.grad().defined()) p.mutable_grad() = at::Tensor();
}

at::Tensor& Optimizer::slot(ParamState& s, const char* name, const at::Tensor& p) {
  auto it = s.slots.find(name);
  if (it == s.slots.end()) it = s.slots.emplace(name, torch::zeros_like(p, at::MemoryFormat::Preserve)).first;
  return it->second;
}

std::vector<at::Tensor> Optimizer::slots(Bucket& b, const char* name) {
  std::vector<at::Tensor> out;
  out.reserve(b.ps.size());
  for (size_t i = 0; i < b.ps.size(); ++i) out.push_back(slot(*b.states[i], name, b.ps[i]));
  return out;
}

const ParamState* Optimizer::state_of(const std::string& param) const {
  for (size_t g = 0; g < groups_.size(); ++g)
    for (size_t i = 0; i < groups_[g].names.size(); ++i)
      if (groups_[g].names[i] == param) return state_[g][i].empty() ? nullptr : &state_[g][i];
  return nullptr;
}

void Optimizer::save_state(model::TensorMap& tensors, config::json& meta, const std::string& prefix) const {
  config::json m = config::json::object();
  m["name"] = name_;
  m["lr"] = lr_;
  m["momentum"] = momentum_ ? config::json(*momentum_) : config::json();
  config::json params = config::json::object();
  for (size_t g = 0; g < groups_.size(); ++g)
    for (size_t i = 0; i < groups_[g].params.size(); ++i) {
      const ParamState& s = state_[g][i];
      if (s.empty()) continue;
      const std::string& name = groups_[g].names[i];
      config::json slots = config::json::array();
      for (auto& [slot_name, t] : s.slots) {
        tensors[prefix + name + "." + slot_name] = t.detach().clone();
        slots.push_back(slot_name);
      }
      params[name] = {{"step", s.step}, {"slots", slots}};
    }
  m["params"] = std::move(params);
  save_extra(m);
  const std::string key = meta_key(prefix);
  (key.empty() ? meta : meta[key]) = std::move(m);
}

void Optimizer::load_state(const model::TensorMap& tensors, const config::json& meta, const std::string& prefix) {
  const std::string key = meta_key(prefix);
  const config::json* mp = key.empty() ? &meta : nullptr;
  if (!mp) {
    auto it = meta.find(key);
    KG_CHECK(it != meta.end() && it->is_object(), CheckpointError, "the checkpoint has no optimizer state \"", key,
             "\"");
    mp = &*it;
  }
  const config::json& m = *mp;
  try {
    const std::string saved = m.at("name").get<std::string>();
    KG_CHECK(saved == name_, CheckpointError, "the checkpoint's optimizer state is for ", saved, ", this run uses ",
             name_, " (", key, ".name)");
    // Index the parameters by name; state is restored into a fresh copy and swapped in at the end.
    std::map<std::string, std::pair<size_t, size_t>> index;
    for (size_t g = 0; g < groups_.size(); ++g)
      for (size_t i = 0; i < groups_[g].names.size(); ++i) index[groups_[g].names[i]] = {g, i};
    std::vector<std::vector<ParamState>> restored;
    for (auto& g : groups_) restored.emplace_back(g.params.size());
    for (auto& [name, entry] : m.at("params").items()) {
      auto pos = index.find(name);
      KG_CHECK(pos != index.end(), CheckpointError, "the checkpoint has optimizer state for parameter ", name,
               ", which this model does not have");
      const at::Tensor& p = groups_[pos->second.first].params[pos->second.second];
      ParamState s;
      s.step = entry.at("step").get<int64_t>();
      for (auto& slot_name : entry.at("slots")) {
        const std::string tkey = prefix + name + "." + slot_name.get<std::string>();
        auto t = tensors.find(tkey);
        KG_CHECK(t != tensors.end(), CheckpointError, "the checkpoint lacks optimizer tensor ", tkey);
        KG_CHECK(t->second.sizes() == p.sizes(), CheckpointError, "optimizer tensor ", tkey, " has shape ",
                 t->second.sizes(), " but parameter ", name, " has shape ", p.sizes());
        s.slots[slot_name.get<std::string>()] =
            t->second.to(p.device(), t->second.scalar_type(), /*non_blocking=*/false, /*copy=*/true);
      }
      restored[pos->second.first][pos->second.second] = std::move(s);
    }
    load_extra(m);
    state_ = std::move(restored);
    lr_ = m.at("lr").get<double>();
    if (momentum_ && m.at("momentum").is_number()) momentum_ = m.at("momentum").get<double>();
  } catch (const config::json::exception& e) {
    throw CheckpointError("the checkpoint's optimizer state \"" + key + "\" is malformed: " + e.what());
  }
}

std::string Optimizer::describe() const {
  double wd = 0;
  int64_t no_decay = 0;
  for (auto& g : groups_) wd = std::max(wd, g.weight_decay);
  for (auto& g : groups_) {
    if (g.weight_decay == 0 && wd > 0) no_decay += static_cast<int64_t>(g.params.size());
  }
  // Layer groups in order (a group and its "/no_decay" twin share a multiplier).
  std::vector<std::string> layer_groups;
  std::vector<double> mults;
  for (auto& g : groups_) {
    std::string base = g.name.substr(0, g.name.find('/'));
    if (std::find(layer_groups.begin(), layer_groups.end(), base) == layer_groups.end()) {
      layer_groups.push_back(base);
      mults.push_back(g.lr_mult);
    }
  }
  std::string s = name_ + " lr " + short_number(lr_) + ", wd " + short_number(wd);
  if (no_decay > 0) s += " (no decay on " + std::to_string(no_decay) + " bias/norm tensors)";
  s += ", " + std::to_string(layer_groups.size()) + (layer_groups.size() == 1 ? " group" : " groups");
  bool all_one = true;
  for (double m : mults) all_one = all_one && m == 1.0;
  if (!all_one) {
    std::vector<std::string> ms;
    for (double m : mults) ms.push_back(short_number(m));
    s += " x [" + join(ms, ", ") + "]";
  }
  if (momentum_) s += ", momentum " + short_number(*momentum_);
  return s;
}

OptimizerPtr build(const config::Recipe& recipe, const model::Network& net) {
  return build(recipe, build_param_groups(net, recipe.get<OptimOptions>()));
}

OptimizerPtr build(const config::Recipe& recipe, std::vector<ParamGroup> groups) {
  auto o = recipe.get<OptimOptions>();
  const double lr = peak_lr(o);
  OptimContext ctx{std::move(groups), &recipe, "optim"};
  auto opt = with_context("while building optimizer " + o.name,
                          [&] { return optimizer_registry().create(o.name, recipe.section("optim"), ctx); });
  opt->set_lr(lr);
  return opt;
}

}  // namespace kg::optim
