// Metrics against independent NumPy references (tests/golden/losses_metrics.json, made by
// scripts/golden/gen_losses_metrics.py), in one batch and split into batches; edge cases (AUC with one
// class, ties, perfect QWK, SMAPE 0/0); task checks; the [metric] section (MetricSet).
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <limits>
#include <set>
#include <string>

#include <nlohmann/json.hpp>
#include <torch/torch.h>

#include "config/resolve.h"
#include "config/validate.h"
#include "core/error.h"
#include "core/fs.h"
#include "metric/metric.h"
#include "metric/metric_set.h"
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
  return kg::config::Recipe::validate(kg::config::parse_toml_string(toml, "metric.toml"));
}

torch::Tensor matrix(const json& rows) {
  std::vector<double> v;
  for (auto& r : rows)
    for (auto& x : r) v.push_back(x.get<double>());
  const int64_t n = static_cast<int64_t>(rows.size());
  return torch::tensor(v, torch::kDouble).view({n, n ? static_cast<int64_t>(v.size()) / n : 0});
}

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

template <class F>
std::string config_error(F&& f) {
  try {
    f();
  } catch (const kg::ConfigError& e) {
    return e.what();
  }
  return "";
}

double eval(const std::string& name, kg::Task task, const torch::Tensor& p, const torch::Tensor& t) {
  return kg::metric::evaluate(name, {p.dim() == 2 ? p.size(1) : 1, task}, p, t);
}

const double kNaN = std::numeric_limits<double>::quiet_NaN();

}  // namespace

TEST_CASE("metrics match NumPy references, in one batch and in several", "[unit][metric]") {
  const auto& cases = golden().at("metrics");
  REQUIRE(cases.size() >= 30);
  std::set<std::string> seen;
  for (const auto& c : cases) {
    const std::string name = c.at("name"), task_text = c.at("task");
    const kg::Task task = kg::parse_task(task_text);
    INFO(name << " (" << task_text << ", " << c.at("note").get<std::string>() << ")");
    auto preds = matrix(c.at("preds"));
    auto targets = c.at("hard").get<bool>() ? torch::tensor(c.at("targets").get<std::vector<int64_t>>(), torch::kLong)
                                            : matrix(c.at("targets"));
    const kg::metric::MetricContext ctx{c.at("num_outputs").get<int64_t>(), task};
    REQUIRE_FALSE(c.at("value").is_null());
    const double want = c.at("value").get<double>();
    auto m = kg::metric::create(name, ctx);
    m->update(preds, targets);
    CHECK(m->compute() == Approx(want).margin(1e-6).epsilon(1e-6));
    // Accumulation: the same rows in uneven batches, after a reset, in float32 as training gives them.
    m->reset();
    const int64_t n = preds.size(0);
    for (int64_t lo = 0; lo < n; lo += 4) {
      const int64_t hi = std::min(n, lo + 4 + lo % 3);
      auto t = targets.slice(0, lo, hi);
      m->update(preds.slice(0, lo, hi).to(torch::kFloat), t.is_floating_point() ? t.to(torch::kFloat) : t);
      lo = hi - 4;
    }
    CHECK(m->compute() == Approx(want).margin(1e-5).epsilon(1e-5));
    seen.insert(name);
  }
  for (auto& n : kg::metric::metric_registry().names()) CHECK(seen.count(n));
}

TEST_CASE("activate gives softmax, sigmoid or the raw outputs as float32", "[unit][metric]") {
  auto x = torch::tensor({1.0, -2.0, 0.5, 3.0, 0.0, -1.0}, torch::kDouble).view({2, 3});
  auto mc = kg::metric::activate(x, kg::Task::multiclass);
  CHECK(mc.scalar_type() == torch::kFloat);
  CHECK(torch::allclose(mc.sum(1), torch::ones({2})));
  CHECK(torch::allclose(mc, torch::softmax(x, 1).to(torch::kFloat)));
  CHECK(torch::allclose(kg::metric::activate(x, kg::Task::multilabel), torch::sigmoid(x).to(torch::kFloat)));
  CHECK(torch::allclose(kg::metric::activate(x, kg::Task::binary), torch::sigmoid(x).to(torch::kFloat)));
  CHECK(torch::equal(kg::metric::activate(x, kg::Task::regression), x.to(torch::kFloat)));
  CHECK(contains(config_error([&] { kg::parse_task("segmentation"); }), "data.task"));  // a task is one of four
}

TEST_CASE("AUC: one class present is NaN, ties count one half, columns without both classes are skipped",
          "[unit][metric]") {
  auto p = torch::tensor({0.1, 0.4, 0.35, 0.8}).view({4, 1});
  CHECK(std::isnan(eval("auc", kg::Task::binary, p, torch::ones({4, 1}))));
  CHECK(std::isnan(eval("auc", kg::Task::binary, p, torch::zeros({4, 1}))));
  CHECK(eval("auc", kg::Task::binary, p, torch::tensor({0., 0., 1., 1.}).view({4, 1})) ==
        Approx(0.75));  // sklearn's example
  CHECK(eval("auc", kg::Task::binary, torch::full({6, 1}, 0.5), torch::tensor({0., 1., 0., 1., 1., 0.})) ==
        Approx(0.5));
  CHECK(eval("auc", kg::Task::binary, torch::tensor({0.2, 0.2, 0.9}), torch::tensor({0., 1., 1.})) == Approx(0.75));
  // Multilabel: the second label has positives only, so the average is over the first.
  auto pm = torch::tensor({0.1, 0.3, 0.4, 0.2, 0.35, 0.9, 0.8, 0.1}).view({4, 2});
  auto tm = torch::tensor({0., 1., 0., 1., 1., 1., 1., 1.}).view({4, 2});
  CHECK(eval("auc", kg::Task::multilabel, pm, tm) == Approx(0.75));
  CHECK(std::isnan(eval("auc", kg::Task::multilabel, pm, torch::ones({4, 2}))));
  // No rows: NaN, not 0.
  auto m = kg::metric::create("auc", {1, kg::Task::binary});
  CHECK(std::isnan(m->compute()));
}

TEST_CASE("QWK: perfect agreement is 1, reversed ratings are negative, one value throughout is NaN", "[unit][metric]") {
  auto t = torch::tensor({0, 1, 2, 3, 2, 1});
  auto onehot = torch::one_hot(t, 4).to(torch::kFloat);
  CHECK(eval("qwk", kg::Task::multiclass, onehot, t) == Approx(1.0));
  CHECK(eval("qwk", kg::Task::multiclass, torch::one_hot(3 - t, 4).to(torch::kFloat), t) < 0);
  CHECK(std::isnan(eval("qwk", kg::Task::multiclass,
                        torch::one_hot(torch::full({3}, 2, torch::kLong), 4).to(torch::kFloat),
                        torch::full({3}, 2, torch::kLong))));
  auto y = torch::tensor({1., 2., 3., 5.}).view({4, 1});
  CHECK(eval("qwk", kg::Task::regression, y + 0.3, y) == Approx(1.0));
  CHECK(eval("qwk", kg::Task::regression, torch::tensor({-4., 2., 3., 9.}).view({4, 1}), y) ==
        Approx(1.0));  // clipped to [1, 5]
  CHECK(contains(config_error([] { kg::metric::create("qwk", {2, kg::Task::regression}); }), "one target column"));
}

TEST_CASE("SMAPE counts 0/0 as 0, is in percent, R2 of a constant column follows sklearn", "[unit][metric]") {
  CHECK(eval("smape", kg::Task::regression, torch::zeros({3, 1}), torch::zeros({3, 1})) == 0.0);
  CHECK(eval("smape", kg::Task::regression, torch::tensor({1., 0.}).view({2, 1}),
             torch::tensor({-1., 0.}).view({2, 1})) == Approx(100.0));
  CHECK(eval("smape", kg::Task::regression, torch::tensor({2.}).view({1, 1}), torch::tensor({0.}).view({1, 1})) ==
        Approx(200.0));
  auto c = torch::full({4, 1}, 3.0);
  CHECK(eval("r2", kg::Task::regression, c, c) == 1.0);
  CHECK(eval("r2", kg::Task::regression, c + 1, c) == 0.0);
  CHECK(eval("rmse", kg::Task::regression, torch::tensor({1., 2.}), torch::tensor({1., 4.})) == Approx(std::sqrt(2.0)));
}

TEST_CASE("F1 and accuracy thresholds: p > 0.5 is positive", "[unit][metric]") {
  auto p = torch::tensor({0.5, 0.51, 0.2, 0.9}).view({4, 1});
  auto t = torch::tensor({0., 1., 0., 0.}).view({4, 1});
  CHECK(eval("accuracy", kg::Task::binary, p, t) == Approx(0.75));
  CHECK(eval("f1", kg::Task::binary, p, t) == Approx(2.0 / 3.0));  // tp 1, fp 1, fn 0
  CHECK(eval("f1_micro", kg::Task::binary, p, t) == Approx(2.0 / 3.0));
  // Multiclass micro F1 is accuracy.
  auto pm = torch::softmax(torch::randn({20, 5}), 1);
  auto tm = torch::randint(0, 5, {20});
  CHECK(eval("f1_micro", kg::Task::multiclass, pm, tm) == Approx(eval("accuracy", kg::Task::multiclass, pm, tm)));
  CHECK(eval("top_k", kg::Task::multiclass, pm, tm) >= eval("top_3", kg::Task::multiclass, pm, tm));
}

TEST_CASE("a metric on the wrong task is a ConfigError naming its tasks and the task's metrics", "[unit][metric]") {
  auto e = config_error([] { kg::metric::create("rmse", {3, kg::Task::multiclass}); });
  CHECK(contains(e, "\"rmse\""));
  CHECK(contains(e, "supports regression"));
  CHECK(contains(e, "accuracy"));
  CHECK(contains(e, "log_loss"));
  e = config_error([] { kg::metric::create("top_k", {1, kg::Task::binary}); });
  CHECK(contains(e, "supports multiclass"));
  CHECK(contains(e, "auc"));
  e = config_error([] { kg::metric::create("accuracy", {1, kg::Task::regression}); });
  CHECK(contains(e, "rmse"));
  CHECK_FALSE(contains(e, "accuracy,"));
  CHECK(contains(config_error([] {
                   kg::metric::create("auc", {1, kg::Task::regression});
                 }),
                 "binary, multilabel, multiclass"));
  CHECK(contains(config_error([] {
                   kg::metric::create("acuracy", {3, kg::Task::multiclass});
                 }),
                 "did you mean accuracy"));
  for (auto& n : kg::metric::metric_registry().names()) CHECK_FALSE(kg::metric::supported_tasks(n).empty());
}

TEST_CASE("[metric]: defaults per task, monitor and direction", "[unit][metric]") {
  using kg::metric::MetricSet;
  auto empty = recipe("[run]\nseed = 1\n");
  CHECK(MetricSet(empty, kg::Task::multiclass, 4).names() == std::vector<std::string>{"accuracy", "log_loss"});
  CHECK(MetricSet(empty, kg::Task::binary, 1).names() == std::vector<std::string>{"auc", "log_loss"});
  CHECK(MetricSet(empty, kg::Task::multilabel, 3).names() == std::vector<std::string>{"auc", "log_loss"});
  MetricSet reg(empty, kg::Task::regression, 2);
  CHECK(reg.names() == std::vector<std::string>{"rmse", "mae"});
  CHECK(reg.monitor() == "rmse");
  CHECK_FALSE(reg.higher_is_better());
  for (kg::Task task : {kg::Task::multiclass, kg::Task::binary, kg::Task::multilabel, kg::Task::regression}) {
    MetricSet s(empty, task, 3);
    CHECK(s.monitor() == s.names().front());
    CHECK(s.higher_is_better() == (task != kg::Task::regression));
  }

  MetricSet ll(recipe("[metric]\nnames = [\"accuracy\", \"log_loss\"]\nmonitor = \"log_loss\"\n"), kg::Task::multiclass,
               3);
  CHECK(ll.monitor() == "log_loss");
  CHECK_FALSE(ll.higher_is_better());
  MetricSet vl(recipe("[metric]\nmonitor = \"valid_loss\"\n"), kg::Task::binary, 1);
  CHECK(vl.monitor() == "valid_loss");
  CHECK_FALSE(vl.higher_is_better());
  MetricSet forced(recipe("[metric]\nnames = [\"mae\"]\nmode = \"max\"\n"), kg::Task::regression, 1);
  CHECK(forced.higher_is_better());

  auto p = torch::softmax(torch::randn({10, 3}), 1);
  auto t = torch::randint(0, 3, {10});
  MetricSet three(recipe("[metric]\nnames = [\"accuracy\", \"f1\", \"qwk\"]\n"), kg::Task::multiclass, 3);
  auto values = three.compute(p, t);
  REQUIRE(values.size() == 3);
  CHECK(values.at("accuracy") == Approx(eval("accuracy", kg::Task::multiclass, p, t)));
  CHECK(values.at("f1") == Approx(eval("f1", kg::Task::multiclass, p, t)));
  CHECK(values.count("qwk"));
}

TEST_CASE("[metric]: better() honours direction, min_delta and NaN", "[unit][metric]") {
  using kg::metric::MetricSet;
  MetricSet hi(recipe("[metric]\nnames = [\"auc\"]\n"), kg::Task::binary, 1);
  CHECK(hi.better(0.8, 0.7));
  CHECK_FALSE(hi.better(0.7, 0.8));
  CHECK_FALSE(hi.better(0.7, 0.7));
  CHECK_FALSE(hi.better(0.705, 0.7, 0.01));
  CHECK(hi.better(0.72, 0.7, 0.01));
  CHECK(hi.better(0.1, kNaN));
  CHECK_FALSE(hi.better(kNaN, 0.5));
  CHECK_FALSE(hi.better(kNaN, kNaN));
  MetricSet lo(recipe("[metric]\nmonitor = \"valid_loss\"\n"), kg::Task::multiclass, 3);
  CHECK(lo.better(0.3, 0.5));
  CHECK_FALSE(lo.better(0.5, 0.3));
  CHECK_FALSE(lo.better(0.295, 0.3, 0.01));
  CHECK(lo.better(5.0, kNaN));
}

TEST_CASE("[metric]: bad names and monitors are ConfigErrors naming the key", "[unit][metric]") {
  using kg::metric::MetricSet;
  auto e =
      config_error([] { MetricSet(recipe("[metric]\nnames = [\"accuracy\", \"rmse\"]\n"), kg::Task::multiclass, 3); });
  CHECK(contains(e, "metric.names"));
  CHECK(contains(e, "metric.toml:2"));
  CHECK(contains(e, "supports regression"));

  e = config_error([] { MetricSet(recipe("[metric]\nnames = [\"auc\"]\nmonitor = \"f1\"\n"), kg::Task::binary, 1); });
  CHECK(contains(e, "metric.monitor"));
  CHECK(contains(e, "is not computed"));
  CHECK(contains(e, "auc, valid_loss"));

  e = config_error([] { MetricSet(recipe("[metric]\nnames = [\"auc\", \"auc\"]\n"), kg::Task::binary, 1); });
  CHECK(contains(e, "listed twice"));

  e = config_error([] { recipe("[metric]\nnames = [\"acc\"]\n"); });
  CHECK(contains(e, "metric.names"));
  CHECK(contains(e, "unknown metric \"acc\""));
  CHECK(contains(config_error([] { recipe("[metric]\nmode = \"maximum\"\n"); }), "auto, max, min"));
}

TEST_CASE("every metric builds from its documented example for each task it supports", "[unit][metric]") {
  torch::manual_seed(1);
  for (auto* c : kg::metric::metric_registry().components()) {
    for (auto& task : kg::metric::supported_tasks(c->name)) {
      INFO(c->name << " on " << kg::task_name(task) << ", example:\n" << c->example);
      const int64_t k = task == kg::Task::binary || task == kg::Task::regression ? 1 : 3;
      kg::metric::MetricSet set(recipe(c->example), task, k);
      const auto names = set.names();
      CHECK(std::find(names.begin(), names.end(), c->name) != names.end());
      auto targets = task == kg::Task::multiclass   ? torch::tensor({0, 2, 1, 1, 0, 2})
                     : task == kg::Task::regression ? torch::tensor({1., 3., 2., 0., 2., 1.}).view({6, 1})
                                                    : torch::tensor({1.f, 0.f, 1.f, 0.f, 1.f, 0.f, 0.f, 1.f, 1.f, 1.f,
                                                                     0.f, 0.f, 1.f, 1.f, 0.f, 0.f, 0.f, 1.f})
                                                          .slice(0, 0, 6 * k)
                                                          .view({6, k});
      auto values = set.compute(kg::metric::activate(torch::randn({6, k}), task), targets);
      for (auto& [name, v] : values) {
        INFO(name);
        CHECK(std::isfinite(v));
      }
    }
  }
}

}  // namespace KG_UNITY_ID
}  // namespace
