// TTA merges against numbers worked out by hand and against numpy (tests/golden/tta.json from
// scripts/golden/gen_tta.py); thresholds; the errors.
#include <catch2/catch.hpp>

#include <torch/torch.h>

#include <cmath>

#include "core/error.h"
#include "core/fs.h"
#include "test_paths.h"
#include "tta/merge.h"

namespace {
namespace KG_UNITY_ID {  // each test file's own names in a unity batch (CMakeLists.txt)

namespace {

using kg::config::json;

const json& golden() {
  static const json j = json::parse(kg::read_file(KGTRAIN_SOURCE_DIR "/tests/golden/tta.json"));
  return j;
}

at::Tensor tensor2d(const json& rows) {
  std::vector<double> v;
  for (auto& r : rows)
    for (auto& x : r) v.push_back(x.get<double>());
  return torch::tensor(v, torch::kDouble).reshape({static_cast<int64_t>(rows.size()), -1}).to(torch::kFloat);
}

std::vector<at::Tensor> tensors(const json& list) {
  std::vector<at::Tensor> out;
  for (auto& o : list) out.push_back(tensor2d(o));
  return out;
}

void check_close(const at::Tensor& got, const json& want, double tol = 1e-6) {
  auto g = got.to(torch::kDouble).contiguous().flatten();
  auto w = tensor2d(want).to(torch::kDouble).flatten();
  REQUIRE(g.numel() == w.numel());
  for (int64_t i = 0; i < g.numel(); ++i) CHECK(g[i].item<double>() == Approx(w[i].item<double>()).margin(tol));
}

template <class E, class F>
std::string error_of(F f) {
  try {
    f();
  } catch (const E& e) {
    return e.what();
  }
  FAIL("expected an error");
  return "";
}

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

}  // namespace

TEST_CASE("tta merge: hand-computed values", "[unit][tta]") {
  using kg::tta::merge;
  // Multiclass: softmax([0, 0]) = [0.5, 0.5], softmax([ln 3, 0]) = [0.75, 0.25].
  std::vector<at::Tensor> mc{torch::tensor({{0.0f, 0.0f}}), torch::tensor({{static_cast<float>(std::log(3.0)), 0.0f}})};
  auto m = merge(mc, "mean", kg::Task::multiclass);
  CHECK(m.scalar_type() == torch::kFloat);
  CHECK(m[0][0].item<double>() == Approx(0.625));
  CHECK(m[0][1].item<double>() == Approx(0.375));
  // Geometric: sqrt(0.5 * 0.75) / (sqrt(0.5 * 0.75) + sqrt(0.5 * 0.25)) = sqrt(3) / (sqrt(3) + 1).
  const double g = std::sqrt(3.0) / (std::sqrt(3.0) + 1);
  CHECK(merge(mc, "geometric", kg::Task::multiclass)[0][0].item<double>() == Approx(g));
  CHECK(merge(mc, "logits", kg::Task::multiclass)[0][0].item<double>() == Approx(g));
  // Weighted 3:1 mean: 0.75 * 0.5 + 0.25 * 0.75.
  CHECK(merge(mc, "mean", kg::Task::multiclass, {3, 1})[0][0].item<double>() == Approx(0.5625));
  // Binary: p = 0.5 and 0.9 (logit ln 9). Mean 0.7; geometric sqrt(.45) / (sqrt(.45) + sqrt(.05)) = 0.75.
  std::vector<at::Tensor> bin{torch::tensor({{0.0f}}), torch::tensor({{static_cast<float>(std::log(9.0))}})};
  CHECK(merge(bin, "mean", kg::Task::binary)[0][0].item<double>() == Approx(0.7));
  CHECK(merge(bin, "geometric", kg::Task::binary)[0][0].item<double>() == Approx(0.75));
  CHECK(merge(bin, "logits", kg::Task::binary)[0][0].item<double>() == Approx(0.75));
  // Multilabel works per column: columns are independent sigmoids.
  std::vector<at::Tensor> ml{torch::tensor({{0.0f, 0.0f}}), torch::tensor({{static_cast<float>(std::log(9.0)), 0.0f}})};
  auto mlm = merge(ml, "mean", kg::Task::multilabel);
  CHECK(mlm[0][0].item<double>() == Approx(0.7));
  CHECK(mlm[0][1].item<double>() == Approx(0.5));
  // Regression: values, never activated.
  std::vector<at::Tensor> reg{torch::tensor({{-1.0f, 4.0f}}), torch::tensor({{3.0f, 2.0f}})};
  CHECK(merge(reg, "mean", kg::Task::regression)[0][0].item<double>() == Approx(1.0));
  CHECK(merge(reg, "logits", kg::Task::regression)[0][1].item<double>() == Approx(3.0));
  CHECK(merge(reg, "mean", kg::Task::regression, {1, 3})[0][0].item<double>() == Approx(2.0));
  // One output merges to its own activation.
  auto one = torch::tensor({{1.0f, -2.0f, 0.5f}});
  CHECK(torch::allclose(merge({one}, "geometric", kg::Task::multiclass), torch::softmax(one, -1)));
}

TEST_CASE("tta merge: every method, task and weighting against numpy", "[unit][tta]") {
  int n = 0;
  for (const auto& c : golden().at("merge")) {
    const kg::Task task = kg::parse_task(c.at("task").get<std::string>());
    const std::string how = c.at("how").get<std::string>();
    std::vector<double> w = c.at("weights").get<std::vector<double>>();
    INFO(kg::task_name(task) << " " << how << " weights " << c.at("weights").dump());
    check_close(kg::tta::merge(tensors(c.at("outputs")), how, task, w), c.at("merged"));
    check_close(kg::tta::merge_probs(tensors(c.at("probs")), how, task, w), c.at("merged_probs"));
    ++n;
  }
  CHECK(n == 33);  // 4 tasks x 3 methods x 3 weightings, regression without geometric
}

TEST_CASE("tta merge_probs: a zero probability stays zero and yields no NaN", "[unit][tta]") {
  std::vector<at::Tensor> p{torch::tensor({{0.0f, 0.5f, 0.5f}}), torch::tensor({{0.2f, 0.8f, 0.0f}})};
  for (auto how : {"geometric", "logits"}) {
    auto m = kg::tta::merge_probs(p, how, kg::Task::multiclass, {1, 0});
    CHECK(torch::isfinite(m).all().item<bool>());
    CHECK(m[0][0].item<double>() == Approx(0.0).margin(1e-12));
    CHECK(m[0][1].item<double>() == Approx(0.5));
  }
  std::vector<at::Tensor> b{torch::tensor({{1.0f}, {0.0f}}), torch::tensor({{0.5f}, {0.5f}})};
  auto m = kg::tta::merge_probs(b, "geometric", kg::Task::binary);
  CHECK(torch::isfinite(m).all().item<bool>());
  CHECK(m[0][0].item<double>() > 0.99);
  CHECK(m[1][0].item<double>() < 0.01);
}

TEST_CASE("tta merge: errors", "[unit][tta]") {
  using kg::tta::merge;
  std::vector<at::Tensor> two{torch::zeros({4, 3}), torch::zeros({4, 3})};
  auto msg = error_of<kg::ConfigError>([&] { merge(two, "geometric", kg::Task::regression); });
  CHECK(has(msg, "geometric"));
  CHECK(has(msg, "regression"));
  CHECK(has(msg, "mean"));
  CHECK_THROWS_AS(kg::tta::merge_probs(two, "geometric", kg::Task::regression), kg::ConfigError);
  msg = error_of<kg::UsageError>([] {
    merge({torch::zeros({4, 3}), torch::zeros({4, 2})}, "mean", kg::Task::multiclass);
  });
  CHECK(has(msg, "[4, 2]"));
  CHECK(has(msg, "[4, 3]"));
  CHECK_THROWS_AS(merge({torch::zeros({4, 3}), torch::zeros({5, 3})}, "mean", kg::Task::multiclass), kg::UsageError);
  CHECK_THROWS_AS(merge({}, "mean", kg::Task::multiclass), kg::UsageError);
  CHECK(has(error_of<kg::ConfigError>([&] { merge(two, "median", kg::Task::multiclass); }),
            "allowed: mean, geometric, logits"));
  CHECK(
      has(error_of<kg::ConfigError>([&] { merge(two, "geometrc", kg::Task::multiclass); }), "did you mean geometric"));
  CHECK_THROWS_AS(kg::parse_task("ranking"), kg::ConfigError);  // a task is one of four, from data.task
  CHECK(has(error_of<kg::ConfigError>([&] { merge(two, "mean", kg::Task::multiclass, {1.0}); }), "1 weights for 2"));
  CHECK_THROWS_AS(merge(two, "mean", kg::Task::multiclass, {1.0, -1.0}), kg::ConfigError);
  CHECK_THROWS_AS(merge(two, "mean", kg::Task::multiclass, {0.0, 0.0}), kg::ConfigError);
}

TEST_CASE("tta apply_threshold: one threshold or one per class", "[unit][tta]") {
  using kg::tta::apply_threshold;
  auto p = torch::tensor({{0.2f, 0.5f, 0.7f}, {0.9f, 0.1f, 0.65f}});
  auto d = apply_threshold(p, 0.5);
  CHECK(d.scalar_type() == torch::kBool);
  CHECK(torch::equal(d, torch::tensor({{false, true, true}, {true, false, true}})));
  CHECK(torch::equal(apply_threshold(p, json::array({0.1, 0.6, 0.7})),
                     torch::tensor({{true, false, true}, {true, false, false}})));
  CHECK(torch::equal(apply_threshold(p, 1), torch::zeros({2, 3}, torch::kBool)));
  // Binary as [N, 1] and as [N].
  CHECK(torch::equal(apply_threshold(torch::tensor({{0.3f}, {0.8f}}), json::array({0.5})),
                     torch::tensor({{false}, {true}})));
  CHECK(torch::equal(apply_threshold(torch::tensor({0.3f, 0.8f}), 0.3), torch::tensor({true, true})));
  auto msg = error_of<kg::ConfigError>([&] { apply_threshold(p, json::array({0.5, 0.5})); });
  CHECK(has(msg, "tta.threshold"));
  CHECK(has(msg, "2 thresholds"));
  CHECK(has(msg, "3 classes"));
  CHECK(has(error_of<kg::ConfigError>([&] {
              apply_threshold(p, json::array({0.5, 0.5}), "pseudo.threshold");
            }),
            "pseudo.threshold"));
  CHECK_THROWS_AS(apply_threshold(p, 1.5), kg::ConfigError);
  CHECK_THROWS_AS(apply_threshold(p, "high"), kg::ConfigError);
  CHECK_THROWS_AS(apply_threshold(p, json::array({0.5, "x", 0.5})), kg::ConfigError);
}

}  // namespace KG_UNITY_ID
}  // namespace
