// End to end through the real binary: interpret on a k-fold run (numbers recomputed here from oof.csv), the
// Grad-CAM localisation test (the CAM's peak on the class-defining mark in >= 90% of images), bad input.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <map>

#include "core/fs.h"
#include "data/csv.h"
#include "report/tb_events.h"
#include "support/fixtures.h"
#include "support/job_helpers.h"
#include "support/marks.h"

namespace {
namespace KG_UNITY_ID {  // each test file's own names in a unity batch (CMakeLists.txt)

namespace fs = std::filesystem;

TEST_CASE("interpret on a k-fold run agrees with a recomputation from oof.csv", "[integration][jobs]") {
  kg::test::TempDir dir;
  auto ds = kg::test::make_tiny_dataset(dir, 64, 4);
  auto recipe = dir.write("tiny.toml", kg::test::tiny_recipe(ds.root));
  const std::string run = dir / "run";
  // One epoch at a high lr: some rows wrong, so the matrix has off-diagonal cells.
  auto fit = kg::test::run_kgtrain(
      {"fit", recipe, "cv.fold=all", "train.epochs=1", "optim.lr=0.5", "--run-dir", run, "--quiet"});
  INFO(fit.output);
  REQUIRE(fit.exit_code == 0);
  auto r = kg::test::run_kgtrain({"interpret", run, "--top", "5", "--quiet"});
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  const std::string out = run + "/interpret";
  for (auto f : {"interpret.json", "confusion_matrix.csv", "confusion_matrix.png", "per_class.csv", "top_losses.png"})
    CHECK(fs::exists(out + "/" + f));

  // The recomputation: arg-max of the probability columns against the target, and -log p(true).
  const auto oof = kg::data::read_csv(run + "/oof.csv");
  std::map<std::string, std::map<std::string, int64_t>> cm;
  double worst = 0;
  const int tc = oof.require_column("target", ""), lc = oof.require_column("left", ""),
            rc = oof.require_column("right", "");
  for (auto& row : oof.rows) {
    const double pl = std::stod(row[static_cast<size_t>(lc)]), pr = std::stod(row[static_cast<size_t>(rc)]);
    const std::string pred = pr > pl ? "right" : "left", truth = row[static_cast<size_t>(tc)];
    ++cm[truth][pred];
    worst = std::max(worst, -std::log(std::max(truth == "left" ? pl : pr, 1e-15)));
  }
  const auto csv = kg::data::read_csv(out + "/confusion_matrix.csv");
  REQUIRE(csv.header == std::vector<std::string>{"actual\\predicted", "left", "right"});
  for (auto& row : csv.rows)
    for (size_t c = 1; c < 3; ++c) CHECK(std::stoll(row[c]) == cm[row[0]][csv.header[c]]);
  const auto j = kg::test::read_json(out + "/interpret.json");
  CHECK(j["rows"] == oof.rows.size());
  CHECK(j["source"] == "oof.csv");
  const int64_t left_support = cm["left"]["left"] + cm["left"]["right"];
  CHECK(j["per_class"][0]["support"] == left_support);
  const double recall = static_cast<double>(cm["left"]["left"]) / static_cast<double>(left_support);
  CHECK(j["per_class"][0]["recall"].get<double>() == Approx(recall));
  REQUIRE(j["images"]["top_losses"].size() == 5);
  CHECK(j["images"]["top_losses"][0]["loss"].get<double>() == Approx(worst));
  int h = 0, w = 0, c = 0;
  CHECK(kg::report::png_size(kg::read_file(out + "/confusion_matrix.png"), h, w, c));
}

TEST_CASE("interpret on a regression run: errors recomputed from oof_fold.csv, scatter and residual plots",
          "[integration][jobs]") {
  kg::test::TempDir dir;
  auto ds = kg::test::make_tiny_dataset(dir, 64, 4);
  kg::test::price_by_side(ds.root);
  auto recipe = dir.write("price.toml", kg::test::regression_recipe(ds.root));
  const std::string run = dir / "run";
  auto fit = kg::test::run_kgtrain({"fit", recipe, "data.task=regression", "data.label_cols=[\"price\"]",
                                    "data.sample_submission=", "train.epochs=1", "--run-dir", run, "--quiet"});
  INFO(fit.output);
  REQUIRE(fit.exit_code == 0);
  auto r = kg::test::run_kgtrain({"interpret", run, "--top", "3", "--quiet"});
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  for (auto f : {"interpret.json", "pred_vs_true.png", "residuals.png", "top_losses.png"})
    CHECK(fs::exists(run + "/interpret/" + f));
  CHECK(!fs::exists(run + "/interpret/confusion_matrix.png"));
  const auto oof = kg::data::read_csv(run + "/oof_fold.csv");
  double abs_sum = 0, sq_sum = 0, worst = 0;
  for (auto& row : oof.rows) {
    const double e = std::stod(row[3]) - std::stod(row[2]);  // prediction - target
    abs_sum += std::fabs(e);
    sq_sum += e * e;
    worst = std::max(worst, e * e);
  }
  const double n = static_cast<double>(oof.rows.size());
  const auto j = kg::test::read_json(run + "/interpret/interpret.json");
  CHECK(j["targets"][0]["name"] == "price");
  CHECK(j["targets"][0]["mae"].get<double>() == Approx(abs_sum / n).epsilon(1e-5));
  CHECK(j["targets"][0]["rmse"].get<double>() == Approx(std::sqrt(sq_sum / n)).epsilon(1e-5));
  CHECK(j["images"]["top_losses"][0]["loss"].get<double>() == Approx(worst).epsilon(1e-5));
}

TEST_CASE("Grad-CAM's peak falls on the class-defining mark in >= 90% of images", "[integration][jobs][slow]") {
  kg::test::TempDir dir;
  const auto ds = kg::test::make_marks_dataset(dir, 320);
  const auto recipe = dir.write("marks.toml", "[run]\nname = \"marks\"\nseed = 5\n[data]\nroot = \"" + ds.root +
                                                  "\"\nchannels = 1\nimage_size = 64\nnum_workers = 0\n"
                                                  "augment = [{ name = \"normalize\", mean = [0.2], std = [0.3] }]\n"
                                                  "[cv]\nfolds = 4\nfold = 0\n[model]\nname = \"resnet9\"\nwidth = 8\n"
                                                  "[optim]\nlr = 0.01\n[train]\nepochs = 6\nbatch_size = 16\n"
                                                  "[device]\nthreads = 2\n");
  const std::string run = dir / "run";
  auto fit = kg::test::run_kgtrain({"fit", recipe, "--run-dir", run, "--quiet"});
  INFO(fit.output);
  REQUIRE(fit.exit_code == 0);
  const double acc = kg::test::read_json(run + "/summary.json")["best"]["value"].get<double>();
  CHECK(acc >= 0.9);
  auto r = kg::test::run_kgtrain({"interpret", run, "--cam", "--cam-n", "1000", "--top", "4", "--quiet"});
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  CHECK(fs::exists(run + "/interpret/cam_random.png"));
  CHECK(fs::exists(run + "/interpret/cam_top_losses.png"));
  const auto cams = kg::data::read_csv(run + "/interpret/cams.csv");
  int tried = 0, hits = 0;
  for (auto& row : cams.rows) {
    if (row[0] != "random") continue;
    const auto& m = ds.marks.at(row[1]);
    const int y = std::stoi(row[4]), x = std::stoi(row[5]);
    // On the mark: inside its square, widened by a quarter of a feature-map cell (64 / map size) for the CAM's
    // resolution.
    const int slack = 64 / std::stoi(row[6]) / 4;
    ++tried;
    hits += y >= m.y0 - slack && y < m.y0 + m.size + slack && x >= m.x0 - slack && x < m.x0 + m.size + slack;
  }
  WARN("Grad-CAM: " << hits << " of " << tried << " peaks on the mark, validation accuracy " << acc);
  CHECK(tried == 80);  // every validation row of fold 0
  if (const char* keep = std::getenv("KG_TEST_KEEP_CAM"))
    fs::copy(run + "/interpret", keep, fs::copy_options::recursive);
  CHECK(hits >= 0.9 * tried);
}

TEST_CASE("interpret refuses what is not a finished run", "[integration][jobs]") {
  kg::test::TempDir dir;
  CHECK(kg::test::run_kgtrain({"interpret", dir / "nothing"}).exit_code == 2);
  fs::create_directories(dir / "empty");
  auto none = kg::test::run_kgtrain({"interpret", dir / "empty"});
  CHECK(none.exit_code == 2);
  CHECK(none.output.find("no recipe.toml") != std::string::npos);
  auto ds = kg::test::make_tiny_dataset(dir, 32, 4);
  auto recipe = dir.write("tiny.toml", kg::test::tiny_recipe(ds.root));
  const std::string run = dir / "run";
  REQUIRE(kg::test::run_kgtrain({"fit", recipe, "train.epochs=1", "--run-dir", run, "--quiet"}).exit_code == 0);
  CHECK(kg::test::run_kgtrain({"interpret", run, "--top", "999"}).exit_code == 2);
  // A damaged OOF file: exit 3 naming the file and line.
  std::string text = kg::read_file(run + "/oof_fold.csv");
  const size_t second = text.find('\n') + 1;
  const size_t comma = text.find(',', text.find(',', second) + 1);  // the target field of the first row
  text.replace(comma + 1, text.find(',', comma + 1) - comma - 1, "zebra");
  kg::write_file_atomic(run + "/oof_fold.csv", text);
  auto bad = kg::test::run_kgtrain({"interpret", run});
  CHECK(bad.exit_code == 3);
  CHECK(bad.output.find("oof_fold.csv") != std::string::npos);
  CHECK(bad.output.find("unknown class \"zebra\"") != std::string::npos);
  fs::remove(run + "/oof_fold.csv");
  auto missing = kg::test::run_kgtrain({"interpret", run});
  CHECK(missing.exit_code == 3);
  CHECK(missing.output.find("no out-of-fold predictions") != std::string::npos);
}

}  // namespace KG_UNITY_ID
}  // namespace
