// End to end through the binary: a 3-fold fit (cv.fold = "all"), then `tta-predict --from-run` with
// identity + hflip views. Every score is recomputed here from the files tta-predict writes (--probs,
// oof_tta.csv) and the truth (test_labels.csv, train.csv); merges are checked against separate
// single-view, single-checkpoint predictions.
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

const char* kViews = "tta.views=[\"identity\", \"hflip\"]";

// id -> (p_left, p_right) of a probabilities file (id,left,right).
std::map<std::string, std::pair<double, double>> probs_by_id(const std::string& path) {
  auto t = kg::data::read_csv(path);
  REQUIRE(t.header == std::vector<std::string>{"id", "left", "right"});
  std::map<std::string, std::pair<double, double>> m;
  for (auto& r : t.rows) m[r[0]] = {std::stod(r[1]), std::stod(r[2])};
  return m;
}

std::string argmax(const std::pair<double, double>& p) { return p.second > p.first ? "right" : "left"; }

double accuracy(const std::map<std::string, std::pair<double, double>>& probs,
                const std::map<std::string, std::string>& label) {
  int correct = 0;
  for (auto& [id, p] : probs) correct += argmax(p) == label.at(id);
  return static_cast<double>(correct) / static_cast<double>(probs.size());
}

// One 3-fold run shared by the test cases (built on first use).
struct Shared {
  kg::test::TempDir dir;
  kg::test::TinyDataset ds;
  std::string recipe, run;
  kg::test::RunResult fit;
  std::map<std::string, std::string> test_label, train_label;

  Shared() {
    ds = kg::test::make_tiny_dataset(dir, 64, 16);
    recipe = dir.write("tiny.toml", kg::test::tiny_recipe(ds.root));
    run = dir / "R";
    fit = kg::test::run_kgtrain(
        {"fit", recipe, "cv.folds=3", "cv.fold=all", "train.epochs=2", "--run-dir", run, "--quiet"});
    test_label = column_by_id(kg::data::read_csv(ds.root + "/test_labels.csv"), "label");
    train_label = column_by_id(kg::data::read_csv(ds.root + "/train.csv"), "label");
  }
  // tta-predict with the recipe (cv.folds=3) and `args`.
  kg::test::RunResult predict(const std::vector<std::string>& args) {
    return kg::test::run_kgtrain(cat({"tta-predict", recipe, "cv.folds=3"}, cat(args, {"--quiet"})));
  }
};

Shared& shared() {
  static auto s = std::make_unique<Shared>();
  INFO(s->fit.output);
  REQUIRE(s->fit.exit_code == 0);
  return *s;
}

}  // namespace

TEST_CASE("tta-predict --from-run: every fold x identity + hflip, scored and written in the sample's order",
          "[integration][jobs][tta]") {
  auto& S = shared();
  const std::string P = S.dir / "P", sub = S.dir / "sub.csv", probs = S.dir / "probs.csv";
  // docs/commands.md's form: an override after --from-run RUN is the command's, not a second run directory.
  auto r = S.predict(
      {"data.test_csv=test_labels.csv", "--from-run", S.run, kViews, "--out", sub, "--probs", probs, "--run-dir", P});
  INFO(r.output);
  REQUIRE(r.exit_code == 0);

  auto summary = read_json(P + "/summary.json");
  CHECK(summary["command"] == "tta-predict");
  CHECK(summary["status"] == "completed");
  CHECK(summary["views"] == json::array({"identity", "hflip"}));
  CHECK(summary["rows"] == 16);
  REQUIRE(summary["models"].size() == 3);
  for (int k = 0; k < 3; ++k) {
    const auto& m = summary["models"][k];
    INFO("member " << k << ": " << m.dump());
    CHECK(m["fold"] == k);
    CHECK(m["weights"].get<std::string>().find("fold_" + std::to_string(k) + "/checkpoints/best") != std::string::npos);
    REQUIRE(m["views"].contains("identity"));
    REQUIRE(m["views"].contains("hflip"));
    CHECK(m["views"]["identity"].contains("accuracy"));
    CHECK(m["merged"].contains("accuracy"));
    // The classes are "bright on the left" / "on the right": mirrored, a trained model gets them wrong.
    CHECK(m["views"]["hflip"]["accuracy"].get<double>() < m["views"]["identity"]["accuracy"].get<double>());
  }

  // The ensemble's metric is the accuracy of the written probabilities against the truth.
  auto p = probs_by_id(probs);
  REQUIRE(p.size() == 16);
  for (auto& [id, q] : p) CHECK(q.first + q.second == Approx(1.0).margin(1e-5));
  const double acc = accuracy(p, S.test_label);
  CHECK(summary["metric"]["name"] == "accuracy");
  CHECK(summary["metric"]["value"].get<double>() == Approx(acc).margin(1e-9));
  CHECK(summary["metrics"]["accuracy"].get<double>() == Approx(acc).margin(1e-9));
  CHECK(r.output.find("ensemble of 3") != std::string::npos);

  // The submission: the sample's header and id order, each row the class of its probabilities.
  auto s = kg::data::read_csv(sub);
  auto sample = kg::data::read_csv(S.ds.root + "/sample_submission.csv");
  REQUIRE(s.header == sample.header);
  REQUIRE(s.rows.size() == sample.rows.size());
  bool shuffled = false;
  for (size_t i = 0; i < s.rows.size(); ++i) {
    CHECK(s.rows[i][0] == sample.rows[i][0]);
    CHECK(s.rows[i][1] == argmax(p.at(s.rows[i][0])));
    shuffled = shuffled || s.rows[i][0] != "te" + std::to_string(i);
  }
  CHECK(shuffled);  // the check above means something only when the sample's order is not the test table's
  CHECK(summary["submission"] == sub);

  SECTION("merges: views by their mean per member, members by their mean; per-view scores") {
    // Each member alone, one view and both views.
    std::vector<std::map<std::string, std::pair<double, double>>> both;
    for (int k = 0; k < 3; ++k) {
      const std::string ck = S.run + "/fold_" + std::to_string(k) + "/checkpoints/best";
      const std::string kb = S.dir / ("m" + std::to_string(k) + "_both.csv");
      auto rb = S.predict({"data.test_csv=test_labels.csv", kViews, "--checkpoint", ck, "--out", S.dir / "x.csv",
                           "--probs", kb, "--run-dir", S.dir / ("Pm" + std::to_string(k))});
      INFO(rb.output);
      REQUIRE(rb.exit_code == 0);
      both.push_back(probs_by_id(kb));
      // The member's merged score, as the ensemble run reported it.
      CHECK(summary["models"][k]["merged"]["accuracy"].get<double>() ==
            Approx(accuracy(both.back(), S.test_label)).margin(1e-9));
    }
    for (auto& [id, q] : p) {
      INFO(id);
      CHECK(q.second == Approx((both[0][id].second + both[1][id].second + both[2][id].second) / 3).margin(2e-5));
    }
    // Fold 0 with each view alone: both views = their mean; the per-view scores match.
    const std::string ck0 = S.run + "/fold_0/checkpoints/best";
    std::map<std::string, std::map<std::string, std::pair<double, double>>> single;
    for (std::string v : {"identity", "hflip"}) {
      const std::string f = S.dir / ("m0_" + v + ".csv");
      auto rv = S.predict({"data.test_csv=test_labels.csv", "tta.views=[\"" + v + "\"]", "--checkpoint", ck0, "--out",
                           S.dir / "y.csv", "--probs", f, "--run-dir", S.dir / ("P0" + v)});
      INFO(rv.output);
      REQUIRE(rv.exit_code == 0);
      single[v] = probs_by_id(f);
      CHECK(summary["models"][0]["views"][v]["accuracy"].get<double>() ==
            Approx(accuracy(single[v], S.test_label)).margin(1e-9));
    }
    int differ = 0;
    for (auto& [id, q] : both[0]) {
      INFO(id);
      CHECK(q.second == Approx((single["identity"][id].second + single["hflip"][id].second) / 2).margin(2e-5));
      differ += std::abs(single["identity"][id].second - single["hflip"][id].second) > 1e-3;
    }
    CHECK(differ > 8);  // hflip really mirrors the input
  }
}

TEST_CASE("tta-predict --oof: each fold's model on its own validation rows, CV recomputed",
          "[integration][jobs][tta]") {
  auto& S = shared();
  static int pass = 0;  // Catch runs the case once per section: a fresh run dir each time
  const std::string O = S.dir / ("O" + std::to_string(++pass));
  auto r = S.predict({kViews, "--from-run", S.run, "--oof", "--run-dir", O});
  INFO(r.output);
  REQUIRE(r.exit_code == 0);

  auto train = kg::data::read_csv(S.ds.root + "/train.csv");
  auto fold_of = column_by_id(kg::data::read_csv(S.run + "/folds.csv"), "fold");
  auto oof = kg::data::read_csv(O + "/oof_tta.csv");
  REQUIRE(oof.header == std::vector<std::string>{"id", "fold", "target", "prediction", "left", "right"});
  // Every training row exactly once, with its fold of the run's split.
  REQUIRE(oof.rows.size() == train.rows.size());
  std::set<std::string> seen;
  std::map<int, int> n, correct;
  for (auto& row : oof.rows) {
    INFO(row[0]);
    CHECK(seen.insert(row[0]).second);
    REQUIRE(fold_of.count(row[0]) == 1);
    CHECK(row[1] == fold_of.at(row[0]));
    CHECK(row[2] == S.train_label.at(row[0]));
    const double l = std::stod(row[4]), p = std::stod(row[5]);
    CHECK(l + p == Approx(1.0).margin(1e-5));
    const int k = std::stoi(row[1]);
    ++n[k];
    correct[k] += (p > l ? "right" : "left") == S.train_label.at(row[0]);
  }
  CHECK(seen.size() == 64);
  REQUIRE(n.size() == 3);

  auto cv = read_json(O + "/cv_tta.json");
  CHECK(cv["metric"] == "accuracy");
  CHECK(cv["rows"] == 64);
  CHECK(cv["complete"] == true);
  const int total = correct[0] + correct[1] + correct[2];
  CHECK(cv["oof"].get<double>() == Approx(total / 64.0).margin(1e-9));
  REQUIRE(cv["folds"].size() == 3);
  for (int k = 0; k < 3; ++k) {
    CHECK(cv["folds"][k]["fold"] == k);
    CHECK(cv["folds"][k]["rows"] == n[k]);
    CHECK(cv["folds"][k]["value"].get<double>() == Approx(static_cast<double>(correct[k]) / n[k]).margin(1e-9));
    CHECK(fs::exists(O + "/oof_tta/fold_" + std::to_string(k) + "/oof_fold.csv"));
  }
  auto summary = read_json(O + "/summary.json");
  CHECK(summary["mode"] == "oof");
  CHECK(summary["cv"]["oof"] == cv["oof"]);
  CHECK(summary["views"] == json::array({"identity", "hflip"}));
  REQUIRE(summary["folds"].size() == 3);
  for (auto& f : summary["folds"]) {
    CHECK(f["views"].contains("identity"));
    CHECK(f["views"].contains("hflip"));
  }
  // The fit run's own OOF files are left alone.
  CHECK_FALSE(fs::exists(S.run + "/oof_tta.csv"));

  SECTION("with the identity view alone the OOF predictions are the fit's own oof.csv") {
    const std::string I = S.dir / ("OI" + std::to_string(pass));
    auto ri = S.predict({"--from-run", S.run, "--oof", "--run-dir", I});
    INFO(ri.output);
    REQUIRE(ri.exit_code == 0);
    auto a = kg::data::read_csv(I + "/oof_tta.csv"), b = kg::data::read_csv(S.run + "/oof.csv");
    REQUIRE(a.rows.size() == b.rows.size());
    std::map<std::string, double> fit_p;
    for (auto& row : b.rows) fit_p[row[0]] = std::stod(row[5]);
    for (auto& row : a.rows) {
      INFO(row[0]);
      CHECK(std::stod(row[5]) == Approx(fit_p.at(row[0])).margin(1e-5));
    }
    CHECK(read_json(I + "/cv_tta.json")["oof"] == read_json(S.run + "/cv.json")["oof"]);
  }
  SECTION("the fold count is the run's, not the recipe's cv.folds") {
    // tiny.toml says cv.folds = 4; the run was trained with cv.folds=3 on the command line.
    const std::string F = S.dir / ("OF" + std::to_string(pass));
    auto rf = kg::test::run_kgtrain({"tta-predict", S.recipe, "--from-run", S.run, "--oof", "--run-dir", F, "--quiet"});
    INFO(rf.output);
    REQUIRE(rf.exit_code == 0);
    auto c = read_json(F + "/cv_tta.json");
    CHECK(c["cv_folds"] == 3);
    CHECK(c["complete"] == true);
    CHECK(c["rows"] == 64);
  }
  SECTION("--oof without --from-run is a usage error") {
    auto bad = S.predict({"--checkpoint", S.run + "/fold_0/checkpoints/best", "--oof", "--run-dir", S.dir / "O2"});
    CHECK(bad.exit_code == 2);
    CHECK(bad.output.find("--from-run") != std::string::npos);
  }
}

TEST_CASE("tta-predict refuses an ensemble of different classes or tasks (exit 2)", "[integration][jobs][tta]") {
  auto& S = shared();
  // A second tiny run with three classes: "up" added to the training labels.
  kg::test::TempDir d3;
  auto ds3 = kg::test::make_tiny_dataset(d3, 36, 4);
  std::string csv = "id,label\n";
  for (int i = 0; i < 36; ++i)
    csv += "tr" + std::to_string(i) + "," + (i % 3 == 0 ? "left" : i % 3 == 1 ? "right" : "up") + "\n";
  kg::write_file_atomic(ds3.root + "/train.csv", csv);
  auto recipe3 = d3.write("tiny3.toml", kg::test::tiny_recipe(ds3.root));
  auto fit3 = kg::test::run_kgtrain(
      {"fit", recipe3, "cv.folds=2", "cv.fold=0", "train.epochs=2", "--run-dir", d3 / "R3", "--quiet"});
  INFO(fit3.output);
  REQUIRE(fit3.exit_code == 0);

  {
    INFO("a checkpoint with three classes beside the two-class folds");
    auto r = S.predict({"--from-run", S.run, "--checkpoint", d3 / "R3/checkpoints/best", "--run-dir", S.dir / "X1"});
    INFO(r.output);
    CHECK(r.exit_code == 2);
    CHECK(r.output.find("classes") != std::string::npos);
    CHECK(r.output.find("left, right, up") != std::string::npos);
    CHECK(r.output.find("R3") != std::string::npos);
    CHECK_FALSE(fs::exists(S.dir / "X1/submission.csv"));
  }
  {
    INFO("the other way round");
    auto r = kg::test::run_kgtrain({"tta-predict", recipe3, "--checkpoint", d3 / "R3/checkpoints/best", "--checkpoint",
                                    S.run + "/fold_1/checkpoints/best", "--run-dir", S.dir / "X2", "--quiet"});
    INFO(r.output);
    CHECK(r.exit_code == 2);
    CHECK(r.output.find("classes") != std::string::npos);
  }
  {
    INFO("a binary checkpoint beside multiclass ones");
    auto fb = kg::test::run_kgtrain({"fit", S.recipe, "data.task=binary", "cv.folds=2", "cv.fold=0", "train.epochs=2",
                                     "--run-dir", d3 / "RB", "--quiet"});
    INFO(fb.output);
    REQUIRE(fb.exit_code == 0);
    auto r = S.predict({"--from-run", S.run, "--checkpoint", d3 / "RB/checkpoints/best", "--run-dir", S.dir / "X3"});
    INFO(r.output);
    CHECK(r.exit_code == 2);
    CHECK(r.output.find("task") != std::string::npos);
    CHECK(r.output.find("binary") != std::string::npos);
  }
  {
    INFO("a recipe whose data.task differs from the checkpoints'");
    auto r = S.predict({"data.task=binary", "--from-run", S.run, "--run-dir", S.dir / "X4"});
    INFO(r.output);
    CHECK(r.exit_code == 2);
    CHECK(r.output.find("data.task") != std::string::npos);
  }
  {
    INFO("an unfinished fit run: folds partly trained or missing");
    const std::string copy = d3 / "unfinished";
    fs::copy(S.run, copy, fs::copy_options::recursive);
    auto summary = read_json(copy + "/summary.json");
    summary["status"] = "interrupted";
    kg::write_file_atomic(copy + "/summary.json", summary.dump());
    auto r = S.predict({"--from-run", copy, "--run-dir", S.dir / "X5"});
    INFO(r.output);
    CHECK(r.exit_code == 2);
    CHECK(r.output.find("the fit did not finish (summary.json status \"interrupted\")") != std::string::npos);
    fs::remove(copy + "/summary.json");
    r = S.predict({"--from-run", copy, "--run-dir", S.dir / "X6"});
    CHECK(r.exit_code == 2);
    CHECK(r.output.find("no summary.json") != std::string::npos);
  }
}

}  // namespace KG_UNITY_ID
}  // namespace
