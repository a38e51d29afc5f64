// Parameter groups on a real model: fastai's lr slice (even_mults), explicit multipliers, timm's layer
// decay, no decay on biases and norm weights, and every parameter in exactly one group.
#include <catch2/catch.hpp>

#include <cmath>
#include <functional>
#include <map>

#include <torch/torch.h>

#include "config/resolve.h"
#include "config/validate.h"
#include "core/error.h"
#include "model/model.h"
#include "optim/optimizer.h"

namespace {
namespace KG_UNITY_ID {  // each test file's own names in a unity batch (CMakeLists.txt)

namespace {

kg::config::Recipe recipe(const std::string& optim_keys) {
  return kg::config::Recipe::validate(kg::config::parse_toml_string(
      "[model]\nname = \"resnet9\"\nwidth = 4\n[optim]\n" + optim_keys + "\n", "pg.toml"));
}

kg::model::NetworkPtr resnet9() { return kg::model::build(recipe(""), {3, 10}); }

// Layer group of each ParamGroup ("layer1/no_decay" -> "layer1") -> its multiplier; all twins must agree.
std::map<std::string, double> mults_by_layer_group(const std::vector<kg::optim::ParamGroup>& groups) {
  std::map<std::string, double> m;
  for (auto& g : groups) {
    auto base = g.name.substr(0, g.name.find('/'));
    if (m.count(base)) CHECK(m[base] == g.lr_mult);
    m[base] = g.lr_mult;
  }
  return m;
}

std::string config_error(const std::function<void()>& f) {
  try {
    f();
  } catch (const kg::ConfigError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("lr = [lo, hi] spreads the lr over the layer groups like fastai's even_mults", "[unit][optim]") {
  auto net = resnet9();
  auto names = net->group_names();
  REQUIRE(names == std::vector<std::string>{"stem", "layer1", "layer2", "layer3", "head"});
  auto o = (recipe("lr = [1e-5, 1e-3]")).get<kg::optim::OptimOptions>();
  CHECK(kg::optim::peak_lr(o) == Approx(1e-3));
  auto m = mults_by_layer_group(kg::optim::build_param_groups(*net, o));
  // fastai: step = (stop/start)**(1/(n-1)); lrs = [start * step**i for i in range(n)]
  const double start = 1e-5, stop = 1e-3, step = std::pow(stop / start, 1.0 / 4.0);
  for (size_t i = 0; i < names.size(); ++i) {
    INFO(names[i]);
    CHECK(m.at(names[i]) * stop == Approx(start * std::pow(step, static_cast<double>(i))).epsilon(1e-12));
  }
  CHECK(m.at("stem") * stop == Approx(1e-5));
  CHECK(m.at("layer2") * stop == Approx(1e-4));
  CHECK(m.at("head") == 1.0);

  auto opt = kg::optim::build(recipe("lr = [1e-5, 1e-3]"), *net);
  CHECK(opt->lr() == Approx(1e-3));
  CHECK(opt->describe().find("5 groups x [0.01, 0.0316, 0.1, 0.316, 1]") != std::string::npos);
}

TEST_CASE("group_lr_mult gives one multiplier per layer group", "[unit][optim]") {
  auto net = resnet9();
  auto m = mults_by_layer_group(kg::optim::build_param_groups(
      *net, (recipe("group_lr_mult = [0.1, 0.2, 0.3, 0.4, 1.0]")).get<kg::optim::OptimOptions>()));
  CHECK(m.at("stem") == Approx(0.1));
  CHECK(m.at("layer3") == Approx(0.4));
  CHECK(m.at("head") == Approx(1.0));
  auto msg = config_error([&] { kg::optim::build(recipe("group_lr_mult = [0.1, 1.0]"), *net); });
  CHECK(msg.find("optim.group_lr_mult has 2 values") != std::string::npos);
  CHECK(msg.find("5 layer groups (stem, layer1, layer2, layer3, head)") != std::string::npos);
}

TEST_CASE("layer_decay scales each group by decay^(depth from the head)", "[unit][optim]") {
  auto net = resnet9();
  auto m = mults_by_layer_group(
      kg::optim::build_param_groups(*net, (recipe("layer_decay = 0.5")).get<kg::optim::OptimOptions>()));
  CHECK(m.at("head") == 1.0);
  CHECK(m.at("layer3") == Approx(0.5));
  CHECK(m.at("layer2") == Approx(0.25));
  CHECK(m.at("layer1") == Approx(0.125));
  CHECK(m.at("stem") == Approx(0.0625));
}

TEST_CASE("only one way of setting per-group lrs at a time", "[unit][optim]") {
  auto net = resnet9();
  auto msg = config_error([&] { kg::optim::build(recipe("lr = [1e-4, 1e-2]\nlayer_decay = 0.7"), *net); });
  CHECK(msg.find("use one of them") != std::string::npos);
  msg = config_error(
      [&] { kg::optim::build(recipe("group_lr_mult = [1.0, 1.0, 1.0, 1.0, 1.0]\nlayer_decay = 0.7"), *net); });
  CHECK(msg.find("use one of them") != std::string::npos);
}

TEST_CASE("every parameter is in exactly one group, biases and norm weights get no decay", "[unit][optim]") {
  auto net = resnet9();
  // A frozen layer is still grouped: it may be unfrozen later (fine_tune).
  for (auto& p : net->named_parameters())
    if (p.key().rfind("prep", 0) == 0) p.value().requires_grad_(false);
  auto groups = kg::optim::build_param_groups(*net, (recipe("weight_decay = 0.05")).get<kg::optim::OptimOptions>());
  std::map<std::string, int> seen;
  for (auto& g : groups) {
    REQUIRE(g.params.size() == g.names.size());
    const bool no_decay = g.name.find("/no_decay") != std::string::npos;
    CHECK(g.weight_decay == (no_decay ? 0.0 : 0.05));
    for (size_t i = 0; i < g.params.size(); ++i) {
      ++seen[g.names[i]];
      CHECK((g.params[i].dim() <= 1) == no_decay);
    }
  }
  auto all = net->named_parameters();
  CHECK(seen.size() == all.size());
  for (auto& p : all) {
    INFO(p.key());
    CHECK(seen[p.key()] == 1);
  }
  // Parameter tensors are the model's own (the optimizer updates them in place).
  CHECK(groups.front().params.front().is_same(all[groups.front().names.front()]));
  CHECK(groups.front().name == "stem");
  CHECK(groups.back().name == "head/no_decay");

  auto decay_all = kg::optim::build_param_groups(
      *net, (recipe("weight_decay = 0.05\ndecay_norm_bias = true")).get<kg::optim::OptimOptions>());
  for (auto& g : decay_all) {
    CHECK(g.name.find("/no_decay") == std::string::npos);
    CHECK(g.weight_decay == 0.05);
  }
}

TEST_CASE("optim.lr is a positive number, [lo, hi] or \"find\"", "[unit][optim]") {
  auto problems = [](const std::string& lr) { return config_error([&] { recipe("lr = " + lr); }); };
  CHECK(problems("3e-3").empty());
  CHECK(problems("[1e-5, 1e-3]").empty());
  CHECK(problems("\"find\"").empty());
  CHECK(problems("-1.0").find("optim.lr: expected a number > 0, got -1.0") != std::string::npos);
  CHECK(problems("[1e-3, 1e-5]").find("0 < lo <= hi") != std::string::npos);
  CHECK(problems("[1e-3]").find("optim.lr") != std::string::npos);
  CHECK(problems("\"fnd\"").find("optim.lr") != std::string::npos);
  CHECK(problems("1e-3\nlayer_decay = 1.5").find("optim.layer_decay") != std::string::npos);
}

}  // namespace KG_UNITY_ID
}  // namespace
