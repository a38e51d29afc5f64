// Losses against PyTorch (tests/golden/losses_metrics.json, made by scripts/golden/gen_losses_metrics.py),
// built through the real recipe path (TOML text -> validate -> loss::build); numeric gradient checks
// for the hand-written focal and SMAPE; task/option errors.
#include <catch2/catch.hpp>

#include <cmath>
#include <set>
#include <string>

#include <nlohmann/json.hpp>
#include <torch/torch.h>

#include "config/resolve.h"
#include "config/validate.h"
#include "core/error.h"
#include "core/fs.h"
#include "loss/loss.h"
#include "test_paths.h"

namespace {
namespace KG_UNITY_ID {  // each test file's own names in a unity batch (CMakeLists.txt)

using nlohmann::json;

namespace {

const json& golden() {
  static const json j = json::parse(kg::read_file(KGTRAIN_SOURCE_DIR "/tests/golden/losses_metrics.json"));
  return j;
}

kg::config::Recipe recipe(const std::string& toml) {
  return kg::config::Recipe::validate(kg::config::parse_toml_string(toml, "loss.toml"));
}

torch::Tensor matrix(const json& rows) {
  std::vector<double> v;
  for (auto& r : rows)
    for (auto& x : r) v.push_back(x.get<double>());
  const int64_t n = static_cast<int64_t>(rows.size());
  return torch::tensor(v, torch::kDouble).view({n, n ? static_cast<int64_t>(v.size()) / n : 0});
}

torch::Tensor targets_of(const json& c) {
  if (c.at("hard").get<bool>()) return torch::tensor(c.at("targets").get<std::vector<int64_t>>(), torch::kLong);
  return matrix(c.at("targets"));
}

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

// The ConfigError text `f` throws ("" when it throws nothing).
template <class F>
std::string config_error(F&& f) {
  try {
    f();
  } catch (const kg::ConfigError& e) {
    return e.what();
  }
  return "";
}

// Central finite differences of loss(x) against autograd, float64.
void check_gradient(const kg::loss::Loss& loss, torch::Tensor x, const torch::Tensor& t) {
  x = x.clone().to(torch::kDouble).requires_grad_(true);
  auto g = torch::autograd::grad({loss.forward(x, t)}, {x})[0];
  const double h = 1e-6;
  auto flat = x.detach().clone().view({-1});
  for (int64_t i = 0; i < flat.numel(); ++i) {
    auto plus = flat.clone(), minus = flat.clone();
    plus[i] += h;
    minus[i] -= h;
    const double num =
        (loss.forward(plus.view_as(x), t).item<double>() - loss.forward(minus.view_as(x), t).item<double>()) / (2 * h);
    INFO("element " << i);
    CHECK(g.view({-1})[i].item<double>() == Approx(num).margin(1e-6).epsilon(1e-5));
  }
}

}  // namespace

TEST_CASE("losses match PyTorch on fixed logits and targets", "[unit][loss]") {
  const auto& cases = golden().at("losses");
  REQUIRE(cases.size() >= 40);
  std::set<std::string> seen;
  for (const auto& c : cases) {
    const std::string name = c.at("name"), task_text = c.at("task"), toml = c.at("toml");
    const kg::Task task = kg::parse_task(task_text);
    INFO(name << " (" << task_text << ", " << c.at("note").get<std::string>() << ")\n" << toml);
    auto logits = matrix(c.at("logits"));
    auto targets = targets_of(c);
    auto loss = kg::loss::build(recipe(toml), {logits.size(1), task});
    const double want = c.at("value").get<double>();
    CHECK(loss->forward(logits, targets).item<double>() == Approx(want).margin(1e-6).epsilon(1e-6));
    // The training dtype: float32 logits and targets.
    auto t32 = targets.is_floating_point() ? targets.to(torch::kFloat) : targets;
    CHECK(loss->forward(logits.to(torch::kFloat), t32).item<double>() == Approx(want).margin(1e-4).epsilon(1e-4));
    seen.insert(name);
  }
  // Every registered loss has golden values.
  for (auto& n : kg::loss::loss_registry().names()) CHECK(seen.count(n));
}

TEST_CASE("binary losses take [N] targets for a single output", "[unit][loss]") {
  auto loss = kg::loss::build(recipe("[loss]\nname = \"bce_with_logits\"\n"), {1, kg::Task::binary});
  auto x = torch::tensor({0.3, -1.2, 2.0}, torch::kDouble).view({3, 1});
  auto t = torch::tensor({1.0, 0.0, 1.0}, torch::kDouble);
  CHECK(loss->forward(x, t).item<double>() ==
        Approx(torch::binary_cross_entropy_with_logits(x, t.view({3, 1})).item<double>()));
  try {
    loss->forward(x, torch::ones({3, 2}, torch::kDouble));
    FAIL("no error for mismatched targets");
  } catch (const kg::DataError& e) {
    CHECK(contains(e.what(), "bce_with_logits"));
    CHECK(contains(e.what(), "[3, 1]"));
  }
}

TEST_CASE("focal and smape gradients match finite differences", "[unit][loss]") {
  torch::manual_seed(3);
  SECTION("softmax focal, hard and soft targets") {
    auto loss = kg::loss::build(recipe("[loss]\nname = \"focal\"\ngamma = 2.0\n"), {4, kg::Task::multiclass});
    check_gradient(*loss, torch::randn({5, 4}) * 2, torch::tensor({0, 3, 1, 2, 2}));
    check_gradient(*loss, torch::randn({5, 4}) * 2, torch::softmax(torch::randn({5, 4}, torch::kDouble), 1));
  }
  SECTION("softmax focal, fractional gamma") {
    auto loss = kg::loss::build(recipe("[loss]\nname = \"focal\"\ngamma = 1.5\n"), {3, kg::Task::multiclass});
    check_gradient(*loss, torch::randn({4, 3}), torch::tensor({2, 0, 1, 1}));
  }
  SECTION("sigmoid focal with alpha") {
    auto loss =
        kg::loss::build(recipe("[loss]\nname = \"focal\"\ngamma = 2.0\nalpha = 0.25\n"), {3, kg::Task::multilabel});
    check_gradient(*loss, torch::randn({4, 3}) * 2, (torch::rand({4, 3}) > 0.5).to(torch::kDouble));
  }
  SECTION("smape") {
    auto loss = kg::loss::build(recipe("[loss]\nname = \"smape\"\n"), {2, kg::Task::regression});
    // Away from the kinks (y = p, p = 0) where |.| has no derivative.
    auto x = torch::tensor({1.5, -2.0, 0.7, 3.1, -0.4, 2.2}, torch::kDouble).view({3, 2});
    auto y = torch::tensor({1.0, -2.5, 1.9, 2.0, 0.6, -1.0}, torch::kDouble).view({3, 2});
    check_gradient(*loss, x, y);
  }
}

TEST_CASE("smape loss is in percent and finite at 0/0", "[unit][loss]") {
  auto loss = kg::loss::build(recipe("[loss]\nname = \"smape\"\n"), {1, kg::Task::regression});
  auto x = torch::tensor({1.0, 0.0}, torch::kDouble).view({2, 1}).requires_grad_(true);
  auto y = torch::tensor({-1.0, 0.0}, torch::kDouble).view({2, 1});
  auto v = loss->forward(x, y);
  CHECK(v.item<double>() == Approx(100.0));  // (200 + 0) / 2
  v.backward();
  CHECK(torch::isfinite(x.grad()).all().item<bool>());
}

TEST_CASE("focal with gamma 0 is cross-entropy, alpha does not change the multiclass form", "[unit][loss]") {
  auto x = torch::randn({6, 5}, torch::kDouble);
  auto t = torch::tensor({0, 4, 2, 2, 1, 3});
  auto ce = kg::loss::build(recipe("[loss]\nname = \"cross_entropy\"\n"), {5, kg::Task::multiclass})
                ->forward(x, t)
                .item<double>();
  auto f0 = kg::loss::build(recipe("[loss]\nname = \"focal\"\ngamma = 0.0\nalpha = 0.9\n"), {5, kg::Task::multiclass});
  CHECK(f0->forward(x, t).item<double>() == Approx(ce).epsilon(1e-12));
}

TEST_CASE("default loss per task, used when loss.name is not set", "[unit][loss]") {
  CHECK(kg::loss::default_loss(kg::Task::multiclass) == "cross_entropy");
  CHECK(kg::loss::default_loss(kg::Task::binary) == "bce_with_logits");
  CHECK(kg::loss::default_loss(kg::Task::multilabel) == "bce_with_logits");
  CHECK(kg::loss::default_loss(kg::Task::regression) == "mse");
  CHECK(contains(config_error([] { kg::parse_task("ranking"); }), "multiclass, multilabel, binary, regression"));

  auto r = recipe("[run]\nseed = 1\n");  // no [loss] table at all
  auto x = torch::tensor({0.5, -0.25, 2.0, 1.0}, torch::kDouble).view({2, 2});
  auto y = torch::tensor({1.0, 0.0, 0.0, 3.0}, torch::kDouble).view({2, 2});
  CHECK(kg::loss::build(r, {2, kg::Task::regression})->forward(x, y).item<double>() ==
        Approx(torch::mse_loss(x, y).item<double>()));
  CHECK(kg::loss::build(r, {2, kg::Task::multilabel})->forward(x, y.clamp(0, 1)).item<double>() ==
        Approx(torch::binary_cross_entropy_with_logits(x, y.clamp(0, 1)).item<double>()));
  CHECK(kg::loss::build(r, {2, kg::Task::multiclass})->forward(x, torch::tensor({1, 0})).item<double>() ==
        Approx(torch::nll_loss(torch::log_softmax(x, 1), torch::tensor({1, 0})).item<double>()));
}

TEST_CASE("a loss on the wrong task is a ConfigError naming the losses that fit", "[unit][loss]") {
  auto e = config_error([] { kg::loss::build(recipe("[loss]\nname = \"cross_entropy\"\n"), {1, kg::Task::binary}); });
  CHECK(contains(e, "loss.name"));
  CHECK(contains(e, "loss.toml:2"));
  CHECK(contains(e, "data.task = \"binary\""));
  CHECK(contains(e, "bce_with_logits"));
  CHECK(contains(e, "focal"));

  e = config_error([] { kg::loss::build(recipe("[loss]\nname = \"bce_with_logits\"\n"), {3, kg::Task::multiclass}); });
  CHECK(contains(e, "supports binary, multilabel"));
  CHECK(contains(e, "cross_entropy"));

  e = config_error([] { kg::loss::build(recipe("[loss]\nname = \"mse\"\n"), {1, kg::Task::binary}); });
  CHECK(contains(e, "supports regression"));
  e = config_error([] { kg::loss::build(recipe("[loss]\nname = \"huber\"\n"), {3, kg::Task::multilabel}); });
  CHECK(contains(e, "supports regression"));
  e = config_error([] { kg::loss::build(recipe("[loss]\nname = \"smape\"\n"), {3, kg::Task::multiclass}); });
  CHECK(contains(e, "smape"));
  e = config_error([] { kg::loss::build(recipe("[loss]\nname = \"focal\"\n"), {2, kg::Task::regression}); });
  CHECK(contains(e, "huber"));
  CHECK(contains(e, "l1"));
  e = config_error([] { kg::parse_task("ordinal"); });  // a task is one of four, from data.task
  CHECK(contains(e, "data.task = \"ordinal\""));

  for (auto& n : kg::loss::loss_registry().names()) CHECK_FALSE(kg::loss::supported_tasks(n).empty());
}

TEST_CASE("loss options that do not fit K are ConfigErrors, bad values fail validation", "[unit][loss]") {
  auto e = config_error([] {
    kg::loss::build(recipe("[loss]\nname = \"cross_entropy\"\nclass_weights = [1.0, 2.0, 3.0]\n"),
                    {4, kg::Task::multiclass});
  });
  CHECK(contains(e, "loss.class_weights"));
  CHECK(contains(e, "3 values"));
  CHECK(contains(e, "K = 4"));
  CHECK(contains(e, "while building loss cross_entropy"));

  e = config_error([] {
    kg::loss::build(recipe("[loss]\nname = \"bce_with_logits\"\npos_weight = [1.0, 2.0]\n"), {3, kg::Task::multilabel});
  });
  CHECK(contains(e, "loss.pos_weight"));
  CHECK(contains(e, "K = 3"));

  CHECK(contains(config_error([] { recipe("[loss]\nname = \"bce_with_logits\"\npos_weight = -1.0\n"); }),
                 "loss.pos_weight"));
  CHECK(contains(config_error([] { recipe("[loss]\nname = \"bce_with_logits\"\npos_weight = []\n"); }),
                 "loss.pos_weight"));
  CHECK(contains(config_error([] { recipe("[loss]\nname = \"focal\"\nalpha = 1.5\n"); }), "or -1"));
  CHECK(contains(config_error([] { recipe("[loss]\nname = \"huber\"\ndelta = 0.0\n"); }), "loss.delta"));
  CHECK(contains(config_error([] { recipe("[loss]\nname = \"cross_entropy\"\nclass_weights = [1.0, -2.0]\n"); }),
                 "loss.class_weights"));
  CHECK(config_error([] { recipe("[loss]\nname = \"focal\"\nalpha = -1\n"); }).empty());
}

TEST_CASE("every loss builds from its documented example for each task it supports", "[unit][loss]") {
  torch::manual_seed(1);
  for (auto* c : kg::loss::loss_registry().components()) {
    for (auto& task : kg::loss::supported_tasks(c->name)) {
      INFO(c->name << " on " << kg::task_name(task) << ", example:\n" << c->example);
      const int64_t k = task == kg::Task::binary ? 1 : 3;
      auto targets = task == kg::Task::multiclass   ? torch::tensor({0, 2, 1, 1})
                     : task == kg::Task::regression ? torch::randn({4, k})
                                                    : (torch::rand({4, k}) > 0.5).to(torch::kFloat);
      auto x = torch::randn({4, k}).requires_grad_(true);
      auto v = kg::loss::build(recipe(c->example), {k, task})->forward(x, targets);
      REQUIRE(v.dim() == 0);
      CHECK(std::isfinite(v.item<double>()));
      v.backward();
      CHECK(torch::isfinite(x.grad()).all().item<bool>());
    }
  }
}

}  // namespace KG_UNITY_ID
}  // namespace
