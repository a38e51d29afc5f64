// Regression through the binary: data.target_transform's fitted scale travels in the checkpoint and every
// output (the log, OOF, tta-predict) is in target units; a checkpoint whose scale the recipe does not
// declare is refused with the reason.
#include <catch2/catch.hpp>

#include <filesystem>
#include <numeric>

#include "core/fs.h"
#include "data/csv.h"
#include "model/weights/safetensors.h"
#include "support/fixtures.h"

namespace {
namespace KG_UNITY_ID {  // each test file's own names in a unity batch (CMakeLists.txt)

namespace fs = std::filesystem;

namespace {

using kg::test::price_by_side;
using kg::test::regression_recipe;

// The prediction column's mean of a CSV with a `prediction` (oof) or `price` (submission) column.
double mean_of(const std::string& path, const std::string& column) {
  auto t = kg::data::read_csv(path);
  const auto c = t.column(column);
  REQUIRE(c >= 0);
  double s = 0;
  for (auto& r : t.rows) s += std::stod(r[static_cast<size_t>(c)]);
  return s / static_cast<double>(t.rows.size());
}

}  // namespace

TEST_CASE("regression: target_transform is fitted on the training fold and every output is in target units",
          "[integration][jobs]") {
  kg::test::TempDir dir;
  auto ds = kg::test::make_tiny_dataset(dir, 96, 16);
  price_by_side(ds.root);
  auto recipe = dir.write("price.toml", regression_recipe(ds.root));
  const std::vector<std::string> regression = {"data.task=regression", "data.label_cols=[\"price\"]",
                                               "data.sample_submission=", "train.epochs=1"};
  auto fit = [&](const std::string& run, const std::string& transform) {
    std::vector<std::string> a = {
        "fit", recipe, "--run-dir", run, "data.target_transform=" + transform, "device.channels_last=true"};
    a.insert(a.end(), regression.begin(), regression.end());
    return kg::test::run_kgtrain(a);
  };

  const std::string run = dir / "std";
  auto r = fit(run, "standardize");
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  // Fold 1 of 4 trains on 72 rows; the log names the fitted values.
  CHECK(r.output.find("target  standardize (shift ") != std::string::npos);
  CHECK(r.output.find("fitted on 72 training rows") != std::string::npos);
  CHECK(r.output.find("regression, 1 target;") != std::string::npos);  // not "1 classes"
  CHECK(kg::config::json::parse(kg::read_file(run + "/summary.json"))["model"]["channels_last"] == true);
  auto w = kg::model::read_safetensors(run + "/checkpoints/best/model.safetensors");
  REQUIRE(w.count("target_shift"));
  const double shift = w["target_shift"].item<double>(), scale = w["target_scale"].item<double>();
  CHECK(shift > 150);  // the mean of 100s and 300s
  CHECK(shift < 250);
  CHECK(scale == Approx(std::sqrt((shift - 100) * (300 - shift))));  // two-valued targets
  // One epoch of a width-4 net: predictions sit near the mean price, not near the head's 0.
  const double oof_mean = mean_of(run + "/oof_fold.csv", "prediction");
  CHECK(oof_mean > 100);
  CHECK(oof_mean < 300);

  SECTION("tta-predict maps the checkpoint's outputs back the same way") {
    std::string sub = dir / "sub.csv";
    std::vector<std::string> a = {"tta-predict",
                                  recipe,
                                  "data.test_csv=test_labels.csv",
                                  "--checkpoint",
                                  run + "/checkpoints/best",
                                  "--out",
                                  sub,
                                  "--run-dir",
                                  dir / "pred",
                                  "data.target_transform=standardize"};
    a.insert(a.end(), regression.begin(), regression.end());
    auto p = kg::test::run_kgtrain(a);
    INFO(p.output);
    REQUIRE(p.exit_code == 0);
    const double m = mean_of(sub, "price");
    CHECK(m > 100);
    CHECK(m < 300);
  }
  SECTION("a checkpoint with a fitted scale under a recipe without one: exit 3 naming target_shift") {
    std::vector<std::string> a = {"tta-predict",
                                  recipe,
                                  "data.test_csv=test_labels.csv",
                                  "--checkpoint",
                                  run + "/checkpoints/best",
                                  "--out",
                                  dir / "sub2.csv",
                                  "--run-dir",
                                  dir / "pred2"};
    a.insert(a.end(), regression.begin(), regression.end());
    auto p = kg::test::run_kgtrain(a);
    INFO(p.output);
    CHECK(p.exit_code == 3);
    CHECK(p.output.find("target_shift") != std::string::npos);
    CHECK(p.output.find("data.target_transform") != std::string::npos);
  }
  SECTION("without the transform the same run starts from 0: its predictions are far below the prices") {
    const std::string raw = dir / "raw";
    auto q = fit(raw, "none");
    INFO(q.output);
    REQUIRE(q.exit_code == 0);
    CHECK(mean_of(raw + "/oof_fold.csv", "prediction") < 0.5 * oof_mean);
    CHECK_FALSE(kg::model::read_safetensors(raw + "/checkpoints/best/model.safetensors").count("target_shift"));
  }
  SECTION("log1p refuses a target it cannot map, naming the row") {
    auto t = kg::read_file(ds.root + "/train.csv");
    t.replace(t.find(",100\n"), 5, ",-3\n");
    kg::write_file_atomic(ds.root + "/train.csv", t);
    auto q = fit(dir / "neg", "log1p");
    INFO(q.output);
    CHECK(q.exit_code == 3);
    CHECK(q.output.find("train.csv row") != std::string::npos);
    CHECK(q.output.find("above -1") != std::string::npos);
  }
  SECTION("a classification task refuses the key: exit 2") {
    auto q = kg::test::run_kgtrain({"fit", recipe, "--run-dir", dir / "cls", "data.target_transform=standardize"});
    CHECK(q.exit_code == 2);
    CHECK(q.output.find("regression") != std::string::npos);
  }
}

}  // namespace KG_UNITY_ID
}  // namespace
