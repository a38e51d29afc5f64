// select_pseudo on fixed probability tables: the selected rows were worked out by hand from the
// tables below (threshold on the confidence, per-class top fraction with ceil, both together).
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include <torch/torch.h>

#include "config/tree.h"
#include "core/error.h"
#include "data/pseudo.h"
#include "support/fixtures.h"

namespace {
namespace KG_UNITY_ID {  // each test file's own names in a unity batch (CMakeLists.txt)

using kg::data::PseudoOptions;
using kg::data::select_pseudo;

namespace {

at::Tensor table(const std::vector<std::vector<double>>& rows) {
  const int64_t n = static_cast<int64_t>(rows.size()), k = static_cast<int64_t>(rows[0].size());
  auto t = torch::empty({n, k}, torch::kDouble);
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < k; ++j) t[i][j] = rows[static_cast<size_t>(i)][static_cast<size_t>(j)];
  return t;
}

PseudoOptions opts(double threshold, double top_fraction) {
  PseudoOptions o;
  o.threshold = threshold;
  o.top_fraction = top_fraction;
  return o;
}

using Rows = std::vector<int64_t>;

// Multiclass, 3 classes. Predicted class and confidence (max p) per row:
//   0: c0 .95   1: c0 .60   2: c1 .85   3: c1 .70   4: c2 .90
//   5: c0 .80   6: c2 .40   7: c1 .97   8: c0 .91   9: c1 .50
// class 0 rows {0, 1, 5, 8}, class 1 rows {2, 3, 7, 9}, class 2 rows {4, 6}.
at::Tensor multiclass() {
  return table({{0.95, 0.03, 0.02},
                {0.60, 0.30, 0.10},
                {0.10, 0.85, 0.05},
                {0.20, 0.70, 0.10},
                {0.05, 0.05, 0.90},
                {0.80, 0.10, 0.10},
                {0.30, 0.30, 0.40},
                {0.02, 0.97, 0.01},
                {0.91, 0.04, 0.05},
                {0.25, 0.50, 0.25}});
}

}  // namespace

TEST_CASE("select_pseudo multiclass: threshold only", "[unit][data][pseudo]") {
  auto s = select_pseudo(multiclass(), kg::Task::multiclass, opts(0.9, 0));
  CHECK(s.rows == Rows{0, 4, 7, 8});  // 0.90 itself passes (>=)
  CHECK(s.label == Rows{0, 2, 1, 0});
  REQUIRE(s.confidence.size() == 4);
  CHECK(s.confidence[0] == Approx(0.95));
  CHECK(s.confidence[1] == Approx(0.90));
  CHECK(s.confidence[2] == Approx(0.97));
  CHECK(s.confidence[3] == Approx(0.91));

  CHECK(select_pseudo(multiclass(), kg::Task::multiclass, opts(0.8, 0)).rows == Rows{0, 2, 4, 5, 7, 8});
  CHECK(select_pseudo(multiclass(), kg::Task::multiclass, opts(0.99, 0)).rows.empty());
  // threshold 0 and no top fraction: every row, in order.
  auto all = select_pseudo(multiclass(), kg::Task::multiclass, opts(0, 0));
  CHECK(all.rows == Rows{0, 1, 2, 3, 4, 5, 6, 7, 8, 9});
  CHECK(all.label == Rows{0, 0, 1, 1, 2, 0, 2, 1, 0, 1});
}

TEST_CASE("select_pseudo multiclass: top fraction per predicted class, rounded up", "[unit][data][pseudo]") {
  // 0.5: class 0 keeps 2 of 4 (rows 0, 8), class 1 2 of 4 (7, 2), class 2 1 of 2 (4).
  CHECK(select_pseudo(multiclass(), kg::Task::multiclass, opts(0, 0.5)).rows == Rows{0, 2, 4, 7, 8});
  // 0.3: ceil(1.2) = 2, ceil(1.2) = 2, ceil(0.6) = 1 -> the same rows (rounding down would keep 1, 1, 0).
  CHECK(select_pseudo(multiclass(), kg::Task::multiclass, opts(0, 0.3)).rows == Rows{0, 2, 4, 7, 8});
  // 0.25: exactly 1 per 4-row class, ceil(0.5) = 1 of class 2.
  CHECK(select_pseudo(multiclass(), kg::Task::multiclass, opts(0, 0.25)).rows == Rows{0, 4, 7});
  // 0.75: 3, 3, ceil(1.5) = 2.
  CHECK(select_pseudo(multiclass(), kg::Task::multiclass, opts(0, 0.75)).rows == Rows{0, 2, 3, 4, 5, 6, 7, 8});
  // 1: everything.
  CHECK(select_pseudo(multiclass(), kg::Task::multiclass, opts(0, 1.0)).rows.size() == 10);
  // 0.01: still at least one row per predicted class.
  auto one = select_pseudo(multiclass(), kg::Task::multiclass, opts(0, 0.01));
  CHECK(one.rows == Rows{0, 4, 7});
  CHECK(one.label == Rows{0, 2, 1});
}

TEST_CASE("select_pseudo multiclass: threshold and top fraction both hold", "[unit][data][pseudo]") {
  // threshold 0.75 passes {0, 2, 4, 5, 7, 8}; top 0.5 of each class (counted over all its rows) is
  // {0, 2, 4, 7, 8}: row 5 (third of class 0) is dropped.
  auto s = select_pseudo(multiclass(), kg::Task::multiclass, opts(0.75, 0.5));
  CHECK(s.rows == Rows{0, 2, 4, 7, 8});
  CHECK(s.label == Rows{0, 1, 2, 1, 0});
  // threshold 0.9 passes {0, 4, 7, 8}, all in the top half.
  CHECK(select_pseudo(multiclass(), kg::Task::multiclass, opts(0.9, 0.5)).rows == Rows{0, 4, 7, 8});
  // top 0.25 is {0, 4, 7}; threshold 0.92 leaves {0, 7}.
  CHECK(select_pseudo(multiclass(), kg::Task::multiclass, opts(0.92, 0.25)).rows == Rows{0, 7});
}

TEST_CASE("select_pseudo: equal confidences are ranked by row order", "[unit][data][pseudo]") {
  auto p = table({{0.2, 0.8}, {0.8, 0.2}, {0.2, 0.8}, {0.2, 0.8}, {0.1, 0.9}});
  // class 1 rows {0, 2, 3, 4}: 4 (.9) first, then 0, 2, 3 (.8 each) in row order; 0.5 keeps 2.
  CHECK(select_pseudo(p, kg::Task::multiclass, opts(0, 0.5)).rows == Rows{0, 1, 4});
  CHECK(select_pseudo(p, kg::Task::multiclass, opts(0, 0.75)).rows == Rows{0, 1, 2, 4});
}

TEST_CASE("select_pseudo binary: confidence max(p, 1 - p), classes by p >= 0.5", "[unit][data][pseudo]") {
  // p (positive class) -> class, confidence:
  //   0: .97 -> 1 .97   1: .02 -> 0 .98   2: .55 -> 1 .55   3: .40 -> 0 .60
  //   4: .91 -> 1 .91   5: .08 -> 0 .92   6: .85 -> 1 .85   7: .50 -> 1 .50
  auto p = table({{0.97}, {0.02}, {0.55}, {0.40}, {0.91}, {0.08}, {0.85}, {0.50}});
  auto s = select_pseudo(p, kg::Task::binary, opts(0.9, 0));
  CHECK(s.rows == Rows{0, 1, 4, 5});
  CHECK(s.label == Rows{1, 0, 1, 0});
  REQUIRE(s.confidence.size() == 4);
  CHECK(s.confidence[0] == Approx(0.97));
  CHECK(s.confidence[1] == Approx(0.98));
  CHECK(s.confidence[2] == Approx(0.91));
  CHECK(s.confidence[3] == Approx(0.92));
  // top 0.5: class 1 rows {0, 2, 4, 6, 7} keep ceil(2.5) = 3 -> 0, 4, 6; class 0 rows {1, 3, 5} keep 2 -> 1, 5.
  CHECK(select_pseudo(p, kg::Task::binary, opts(0, 0.5)).rows == Rows{0, 1, 4, 5, 6});
  // top 0.6: 0.6 * 5 is 3.0000000000000004 in floating point: still 3 rows, not 4.
  CHECK(select_pseudo(p, kg::Task::binary, opts(0, 0.6)).rows == Rows{0, 1, 4, 5, 6});
  // both: threshold 0.8 passes {0, 1, 4, 5, 6}; top 0.4 keeps class 1: 2 (0, 4), class 0: 2 (1, 5).
  CHECK(select_pseudo(p, kg::Task::binary, opts(0.8, 0.4)).rows == Rows{0, 1, 4, 5});
}

TEST_CASE("select_pseudo multilabel: the least confident label decides, top fraction over all rows",
          "[unit][data][pseudo]") {
  // confidence = min over labels of max(p, 1 - p):
  //   0: min(.95, .98) = .95   1: min(.60, .99) = .60   2: min(.97, .96) = .96
  //   3: min(.90, .70) = .70   4: min(.99, .99) = .99   5: .50
  auto p = table({{0.95, 0.02}, {0.60, 0.99}, {0.97, 0.96}, {0.10, 0.30}, {0.01, 0.99}, {0.50, 0.50}});
  auto s = select_pseudo(p, kg::Task::multilabel, opts(0.9, 0));
  CHECK(s.rows == Rows{0, 2, 4});
  CHECK(s.label == Rows{-1, -1, -1});
  REQUIRE(s.confidence.size() == 3);
  CHECK(s.confidence[0] == Approx(0.95));
  CHECK(s.confidence[1] == Approx(0.96));
  CHECK(s.confidence[2] == Approx(0.99));
  CHECK(select_pseudo(p, kg::Task::multilabel, opts(0.65, 0)).rows == Rows{0, 2, 3, 4});
  // top 0.25 of 6 rows: ceil(1.5) = 2 -> rows 4, 2.
  CHECK(select_pseudo(p, kg::Task::multilabel, opts(0, 0.25)).rows == Rows{2, 4});
  // both: threshold 0.65 {0, 2, 3, 4}; top 0.5 (3 rows) {4, 2, 0}.
  CHECK(select_pseudo(p, kg::Task::multilabel, opts(0.65, 0.5)).rows == Rows{0, 2, 4});
}

TEST_CASE("select_pseudo regression: no confidence to select by", "[unit][data][pseudo]") {
  auto v = table({{1.5}, {-2.0}, {300.0}});
  CHECK_THROWS_AS(select_pseudo(v, kg::Task::regression, opts(0.9, 0)), kg::ConfigError);
  CHECK_THROWS_AS(select_pseudo(v, kg::Task::regression, opts(0, 0.5)), kg::ConfigError);
  CHECK_THROWS_AS(select_pseudo(v, kg::Task::regression, PseudoOptions{}),
                  kg::ConfigError);  // the default threshold 0.9
  try {
    select_pseudo(v, kg::Task::regression, opts(0.5, 0));
  } catch (const kg::ConfigError& e) {
    CHECK(std::string(e.what()).find("pseudo.threshold") != std::string::npos);
  }
  auto all = select_pseudo(v, kg::Task::regression, opts(0, 0));
  CHECK(all.rows == Rows{0, 1, 2});
  CHECK(all.label == Rows{-1, -1, -1});
}

TEST_CASE("select_pseudo accepts float32 probabilities as the models produce them", "[unit][data][pseudo]") {
  auto p = multiclass().to(torch::kFloat);
  CHECK(select_pseudo(p, kg::Task::multiclass, opts(0.8, 0)).rows == Rows{0, 2, 4, 5, 7, 8});
  CHECK(select_pseudo(p, kg::Task::multiclass, opts(0, 0.5)).rows == Rows{0, 2, 4, 7, 8});
}

TEST_CASE("the [pseudo] recipe section", "[unit][data][pseudo]") {
  kg::test::TempDir dir;
  auto recipe =
      dir.write("r.toml", "[run]\nname = \"p\"\n[pseudo]\nthreshold = 0.8\ntop_fraction = 0.25\nsoft = true\n");
  auto o = (kg::test::resolve_recipe({recipe}, {"pseudo.source_csv=unlabeled.csv"})).get<kg::data::PseudoOptions>();
  CHECK(o.threshold == 0.8);
  CHECK(o.top_fraction == 0.25);
  CHECK(o.soft);
  CHECK(o.source_csv == "unlabeled.csv");
  CHECK(o.source_image_dir.empty());
  auto d =
      (kg::test::resolve_recipe({recipe}, {"pseudo.threshold=0", "pseudo.soft=false"})).get<kg::data::PseudoOptions>();
  CHECK(d.threshold == 0);
  CHECK_FALSE(d.soft);
  CHECK_THROWS_AS(kg::test::resolve_recipe({recipe}, {"pseudo.threshold=1.5"}), kg::ConfigError);
  CHECK_THROWS_AS(kg::test::resolve_recipe({recipe}, {"pseudo.top_fraction=-0.1"}), kg::ConfigError);
  CHECK_THROWS_AS(kg::test::resolve_recipe({recipe}, {"pseudo.treshold=0.5"}), kg::ConfigError);
}

}  // namespace KG_UNITY_ID
}  // namespace
