// metric::interpret against numbers worked out by hand: the confusion matrix, per-class precision / recall /
// F1 (sklearn's zero_division = 0), most-confused order, per-row losses, multilabel AUC, regression errors.
#include <catch2/catch.hpp>

#include <torch/torch.h>

#include <cmath>

#include "metric/interpretation.h"
#include "metric/metric.h"

namespace {
namespace KG_UNITY_ID {  // each test file's own names in a unity batch (CMakeLists.txt)

using kg::metric::interpret;

TEST_CASE("interpret multiclass: confusion, per-class P/R/F1, most confused, cross-entropy", "[unit][metric]") {
  // truth: a a a b b c; predicted: a a b b a b
  const auto p =
      torch::tensor({0.7, 0.2, 0.1, 0.6, 0.3, 0.1, 0.3, 0.6, 0.1, 0.2, 0.7, 0.1, 0.5, 0.4, 0.1, 0.2, 0.5, 0.3})
          .view({6, 3});
  const auto t = torch::tensor({0, 0, 0, 1, 1, 2}, torch::kLong);
  const auto in = interpret(kg::Task::multiclass, {"a", "b", "c"}, p, t);
  const std::vector<int64_t> cm(in.confusion.data_ptr<int64_t>(), in.confusion.data_ptr<int64_t>() + 9);
  CHECK(cm == std::vector<int64_t>{2, 1, 0, 1, 1, 0, 0, 1, 0});
  CHECK(in.accuracy == Approx(3.0 / 6));
  CHECK(in.rows[0].precision == Approx(2.0 / 3));  // a: tp 2, fp 1 (b predicted a)
  CHECK(in.rows[0].recall == Approx(2.0 / 3));
  CHECK(in.rows[1].precision == Approx(1.0 / 3));  // b: tp 1, fp 2
  CHECK(in.rows[1].recall == Approx(0.5));
  CHECK(in.rows[1].f1 == Approx(2 * (1.0 / 3) * 0.5 / (1.0 / 3 + 0.5)));
  CHECK(in.rows[2].precision == 0.0);  // never predicted: 0, not NaN
  CHECK(in.rows[2].support == 1);
  CHECK(in.macro_f1 == Approx((2.0 / 3 + 0.4 + 0.0) / 3));
  REQUIRE(in.most_confused.size() == 3);
  CHECK(in.most_confused[0].count == 1);
  CHECK(in.losses[2].item<double>() == Approx(-std::log(0.3)));
  CHECK(in.losses[5].item<double>() == Approx(-std::log(0.3)));
  const auto j = in.to_json();
  CHECK(j["confusion"][0][1] == 1);
  CHECK(j["per_class"][1]["name"] == "b");
}

TEST_CASE("interpret binary, multilabel and regression", "[unit][metric]") {
  const auto b = interpret(kg::Task::binary, {"no", "yes"}, torch::tensor({0.9, 0.2, 0.6, 0.4}).view({4, 1}),
                           torch::tensor({1.0, 0.0, 0.0, 1.0}).view({4, 1}));
  CHECK(b.confusion[1][1].item<int64_t>() == 1);  // yes -> yes
  CHECK(b.confusion[0][1].item<int64_t>() == 1);  // no -> yes
  CHECK(b.losses[3].item<double>() == Approx(-std::log(0.4)));
  CHECK(b.losses[1].item<double>() == Approx(-std::log(0.8)));

  const auto p = torch::tensor({0.9, 0.1, 0.8, 0.7, 0.2, 0.6, 0.55, 0.4}).view({4, 2});  // row 3: x wrongly
  const auto t = torch::tensor({1.0, 0.0, 1.0, 1.0, 0.0, 1.0, 0.0, 0.0}).view({4, 2});
  const auto ml = interpret(kg::Task::multilabel, {"x", "y"}, p, t);
  CHECK(ml.rows[0].auc == Approx(kg::metric::evaluate("auc", {1, kg::Task::binary}, p.select(1, 0).view({4, 1}),
                                                      t.select(1, 0).view({4, 1}))));
  CHECK(ml.rows[1].support == 2);
  CHECK(ml.rows[0].precision == Approx(2.0 / 3));
  CHECK(ml.rows[1].precision == Approx(2.0 / 2));  // y predicted for rows 1, 2: both true
  CHECK(ml.accuracy == Approx(7.0 / 8));

  const auto r = interpret(kg::Task::regression, {"price"}, torch::tensor({1.0, 2.0, 4.0}).view({3, 1}),
                           torch::tensor({1.0, 3.0, 5.0}).view({3, 1}));
  CHECK(r.mae[0] == Approx(2.0 / 3));
  CHECK(r.rmse[0] == Approx(std::sqrt(2.0 / 3)));
  CHECK(r.r2[0] == Approx(1 - 2.0 / 8.0));  // mean 3: ss_tot 8, ss_res 2
  CHECK(r.losses[1].item<double>() == Approx(1.0));
}

}  // namespace KG_UNITY_ID
}  // namespace
