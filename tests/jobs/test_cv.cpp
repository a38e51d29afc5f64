// End to end through the real binary: k-fold training with out-of-fold predictions (fit cv.fold=all),
// the same folds trained in separate processes and merged (merge-oof), and a subset of folds. The
// metric is recomputed here from oof.csv's probability columns and the training CSV's labels.
#include <catch2/catch.hpp>

#include <cmath>
#include <filesystem>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <set>

#include "core/fs.h"
#include "data/csv.h"
#include "support/fixtures.h"
#include "support/job_helpers.h"
#include "test_paths.h"

namespace {
namespace KG_UNITY_ID {  // each test file's own names in a unity batch (CMakeLists.txt)

using nlohmann::json;
namespace fs = std::filesystem;

namespace {
using kg::test::cat;
using kg::test::column_by_id;
using kg::test::read_json;

const std::vector<std::string> kCv{"cv.folds=3", "train.epochs=1"};

// Accuracy of the rows of an OOF file (all, or those of one fold): argmax over the "left"/"right"
// probability columns against the training CSV's label.
double accuracy(const kg::data::CsvTable& oof, const std::map<std::string, std::string>& label, int fold = -1) {
  int lc = oof.require_column("left", ""), rc = oof.require_column("right", ""), fc = oof.require_column("fold", "");
  int n = 0, correct = 0;
  for (auto& r : oof.rows) {
    if (fold >= 0 && std::stoi(r[static_cast<size_t>(fc)]) != fold) continue;
    double l = std::stod(r[static_cast<size_t>(lc)]), p = std::stod(r[static_cast<size_t>(rc)]);
    std::string pred = p > l ? "right" : "left";
    correct += pred == label.at(r[0]);
    ++n;
  }
  return n ? static_cast<double>(correct) / n : NAN;
}

struct Shared {
  kg::test::TempDir dir;
  kg::test::TinyDataset ds;
  std::string recipe, all_run;
  kg::test::RunResult all;

  Shared() {
    ds = kg::test::make_tiny_dataset(dir, 64, 8);
    recipe = dir.write("tiny.toml", kg::test::tiny_recipe(ds.root));
    all_run = dir / "R";
    all = kg::test::run_kgtrain(cat(cat({"fit", recipe}, kCv), {"cv.fold=all", "--run-dir", all_run, "--quiet"}));
  }
  kg::test::RunResult fit(const std::vector<std::string>& extra, const std::string& run) {
    return kg::test::run_kgtrain(cat(cat({"fit", recipe}, cat(kCv, extra)), {"--run-dir", run, "--quiet"}));
  }
};

Shared& shared() {
  static auto s = std::make_unique<Shared>();
  return *s;
}

// cv.json fields that do not name directories.
void check_same_cv(const json& a, const json& b) {
  for (auto k : {"metric", "mean", "std", "oof", "rows", "complete", "cv_folds"}) CHECK(a[k] == b[k]);
  REQUIRE(a["folds"].size() == b["folds"].size());
  for (size_t i = 0; i < a["folds"].size(); ++i)
    for (auto k : {"fold", "value", "rows"}) CHECK(a["folds"][i][k] == b["folds"][i][k]);
}

}  // namespace

TEST_CASE("fit cv.fold=all trains every fold and writes oof.csv and cv.json", "[integration][cv]") {
  auto& S = shared();
  INFO(S.all.output);
  REQUIRE(S.all.exit_code == 0);
  const std::string R = S.all_run;
  for (int k = 0; k < 3; ++k) {
    const std::string f = R + "/fold_" + std::to_string(k);
    INFO(f);
    for (auto name : {"checkpoints/best/model.safetensors", "checkpoints/best/state.json", "oof_fold.csv", "fold.json",
                      "metrics.jsonl"})
      CHECK(fs::exists(f + "/" + name));
    CHECK(read_json(f + "/fold.json")["fold"] == k);
  }

  auto train = kg::data::read_csv(S.ds.root + "/train.csv");
  auto label = column_by_id(train, "label");
  auto split = kg::data::read_csv(R + "/folds.csv");
  auto fold_of = column_by_id(split, "fold");
  REQUIRE(split.rows.size() == train.rows.size());

  auto oof = kg::data::read_csv(R + "/oof.csv");
  CHECK(oof.header == std::vector<std::string>{"id", "fold", "target", "prediction", "left", "right"});
  // One row per training row, in the training CSV's order, each id once.
  REQUIRE(oof.rows.size() == train.rows.size());
  std::set<std::string> seen;
  std::map<int, int> rows_per_fold;
  for (size_t i = 0; i < oof.rows.size(); ++i) {
    const auto& r = oof.rows[i];
    INFO("oof.csv row " << i + 1 << ": " << r[0]);
    CHECK(r[0] == train.rows[i][0]);
    CHECK(seen.insert(r[0]).second);
    CHECK(r[1] == fold_of.at(r[0]));
    CHECK(r[2] == label.at(r[0]));
    const double l = std::stod(r[4]), p = std::stod(r[5]);
    CHECK(l + p == Approx(1.0).margin(1e-6));
    CHECK(r[3] == (p > l ? "right" : "left"));
    ++rows_per_fold[std::stoi(r[1])];
  }
  CHECK(rows_per_fold.size() == 3);
  // Each fold file holds exactly its fold's rows.
  for (int k = 0; k < 3; ++k) {
    auto f = kg::data::read_csv(R + "/fold_" + std::to_string(k) + "/oof_fold.csv");
    CHECK(static_cast<int>(f.rows.size()) == rows_per_fold[k]);
    for (auto& r : f.rows) CHECK(fold_of.at(r[0]) == std::to_string(k));
  }

  auto cv = read_json(R + "/cv.json");
  CHECK(cv["metric"] == "accuracy");
  CHECK(cv["complete"] == true);
  CHECK(cv["rows"] == 64);
  REQUIRE(cv["folds"].size() == 3);
  std::vector<double> values;
  for (int k = 0; k < 3; ++k) {
    CHECK(cv["folds"][k]["fold"] == k);
    CHECK(cv["folds"][k]["rows"] == rows_per_fold[k]);
    const double v = cv["folds"][k]["value"].get<double>();
    CHECK(v == Approx(accuracy(oof, label, k)).margin(1e-9));
    values.push_back(v);
  }
  CHECK(cv["oof"].get<double>() == Approx(accuracy(oof, label)).margin(1e-9));
  const double mean = (values[0] + values[1] + values[2]) / 3;
  double var = 0;
  for (double v : values) var += (v - mean) * (v - mean) / 3;  // population std (numpy's default)
  CHECK(cv["mean"].get<double>() == Approx(mean).margin(1e-12));
  CHECK(cv["std"].get<double>() == Approx(std::sqrt(var)).margin(1e-12));
  // With equal-sized folds the OOF accuracy is the mean of the folds' (64 rows: 22/21/21, nearly so).
  CHECK(cv["oof"].get<double>() == Approx(mean).margin(0.02));

  auto summary = read_json(R + "/summary.json");
  CHECK(summary["status"] == "completed");
  REQUIRE(summary.contains("cv"));
  CHECK(summary["cv"]["oof"] == cv["oof"]);
  CHECK(summary["cv"]["mean"] == cv["mean"]);
  CHECK(summary["folds"].size() == 3);

  SECTION("merge-oof of the run's own fold dirs (or the run dir) gives the same files") {
    for (auto dirs :
         {std::vector<std::string>{R + "/fold_0", R + "/fold_1", R + "/fold_2"}, std::vector<std::string>{R}}) {
      const std::string out = S.dir / ("remerged" + std::to_string(dirs.size()));
      auto m = kg::test::run_kgtrain(cat(cat({"merge-oof"}, dirs), {"--out", out}));
      INFO(m.output);
      REQUIRE(m.exit_code == 0);
      CHECK(kg::read_file(out + "/oof.csv") == kg::read_file(R + "/oof.csv"));
      check_same_cv(read_json(out + "/cv.json"), cv);
    }
  }
}

TEST_CASE("folds trained in separate processes merge into the same oof.csv and cv.json", "[integration][cv]") {
  auto& S = shared();
  REQUIRE(S.all.exit_code == 0);
  std::vector<std::string> runs;
  for (int k = 0; k < 3; ++k) {
    runs.push_back(S.dir / ("R" + std::to_string(k)));
    auto r = S.fit({"cv.fold=" + std::to_string(k)}, runs.back());
    INFO(r.output);
    REQUIRE(r.exit_code == 0);
    CHECK(kg::read_file(runs.back() + "/folds.csv") == kg::read_file(S.all_run + "/folds.csv"));
  }
  const std::string M = S.dir / "M";
  auto m = kg::test::run_kgtrain({"merge-oof", runs[0], runs[1], runs[2], "--out", M});
  INFO(m.output);
  REQUIRE(m.exit_code == 0);
  // Same seed: same split, and each fold's model starts from the same weights and data stream.
  CHECK(kg::read_file(M + "/oof.csv") == kg::read_file(S.all_run + "/oof.csv"));
  check_same_cv(read_json(M + "/cv.json"), read_json(S.all_run + "/cv.json"));

  {
    INFO("a fold given twice: exit 3");
    auto r = kg::test::run_kgtrain({"merge-oof", runs[0], runs[0], "--out", S.dir / "M_twice"});
    INFO(r.output);
    CHECK(r.exit_code == 3);
    CHECK(r.output.find("appears twice") != std::string::npos);
    CHECK_FALSE(fs::exists(S.dir / "M_twice/oof.csv"));
  }
  {
    INFO("a fold dir without fold.json: exit 3 naming it");
    const std::string broken = S.dir / "R1_unfinished";
    {
      std::error_code ec;
      kg::remove_tree(broken, ec);
    }
    fs::copy(runs[1], broken, fs::copy_options::recursive);
    fs::remove(broken + "/fold.json");
    auto r = kg::test::run_kgtrain({"merge-oof", runs[0], broken, runs[2], "--out", S.dir / "M_broken"});
    INFO(r.output);
    CHECK(r.exit_code == 3);
    CHECK(r.output.find(broken) != std::string::npos);
    CHECK(r.output.find("fold.json") != std::string::npos);
    CHECK_FALSE(fs::exists(S.dir / "M_broken/oof.csv"));
  }
  {
    INFO("a dir holding no fold output: exit 3 naming it");
    const std::string empty = S.dir / "nothing_here";
    fs::create_directories(empty);
    auto r = kg::test::run_kgtrain({"merge-oof", runs[0], empty, "--out", S.dir / "M_empty"});
    INFO(r.output);
    CHECK(r.exit_code == 3);
    CHECK(r.output.find(empty) != std::string::npos);
  }
}

TEST_CASE("cv.fold = [0, 2] trains two folds, cv.json says the OOF is incomplete", "[integration][cv]") {
  auto& S = shared();
  REQUIRE(S.all.exit_code == 0);
  const std::string P = S.dir / "P";
  auto r = S.fit({"cv.fold=[0, 2]"}, P);
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  CHECK(fs::exists(P + "/fold_0/oof_fold.csv"));
  CHECK(fs::exists(P + "/fold_2/oof_fold.csv"));
  CHECK_FALSE(fs::exists(P + "/fold_1"));

  auto fold_of = column_by_id(kg::data::read_csv(P + "/folds.csv"), "fold");
  auto oof = kg::data::read_csv(P + "/oof.csv");
  size_t expected = 0;
  for (auto& [id, f] : fold_of) expected += f != "1";
  CHECK(oof.rows.size() == expected);
  for (auto& row : oof.rows) CHECK(fold_of.at(row[0]) != "1");
  // The same rows, with the same values, as in the cv.fold=all run.
  auto all = kg::data::read_csv(S.all_run + "/oof.csv");
  std::vector<std::vector<std::string>> kept;
  for (auto& row : all.rows)
    if (row[1] != "1") kept.push_back(row);
  CHECK(oof.rows == kept);

  auto cv = read_json(P + "/cv.json");
  CHECK(cv["complete"] == false);
  CHECK(cv["cv_folds"] == 3);
  CHECK(cv["rows"] == expected);
  REQUIRE(cv["folds"].size() == 2);
  CHECK(cv["folds"][0]["fold"] == 0);
  CHECK(cv["folds"][1]["fold"] == 2);
  auto label = column_by_id(kg::data::read_csv(S.ds.root + "/train.csv"), "label");
  CHECK(cv["oof"].get<double>() == Approx(accuracy(oof, label)).margin(1e-9));
  CHECK(read_json(P + "/summary.json")["cv"]["complete"] == false);
}

}  // namespace KG_UNITY_ID
}  // namespace
