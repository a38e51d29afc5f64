// Through the real binary: numeric feature columns into the head, --weights as initial weights for fit
// (head re-initialised for a new head shape) and as the model for tta-predict, and the exit codes of
// bad weights and unknown models.
#include <catch2/catch.hpp>

#include <algorithm>
#include <filesystem>
#include <sstream>

#include <torch/torch.h>
#include <nlohmann/json.hpp>

#include "core/fs.h"
#include "model/weights/safetensors.h"
#include "support/fixtures.h"

namespace {
namespace KG_UNITY_ID {  // each test file's own names in a unity batch (CMakeLists.txt)

namespace fs = std::filesystem;

namespace {

// Adds a numeric column `f` to train.csv and test.csv: 1.5 for "right" rows, -0.5 for "left" rows.
void add_feature_column(const std::string& root) {
  auto add = [&](const std::string& file, const std::string& truth) {
    auto lines = kg::read_file(root + "/" + file);
    auto labels = kg::read_file(root + "/" + truth);
    std::string out, line;
    std::istringstream in(lines), lab(labels);
    std::getline(lab, line);  // header
    bool header = true;
    while (std::getline(in, line)) {
      if (line.empty()) continue;
      if (header) {
        out += line + ",f\n";
        header = false;
        continue;
      }
      std::string l;
      std::getline(lab, l);
      out += line + (l.find("right") != std::string::npos ? ",1.5\n" : ",-0.5\n");
    }
    kg::write_file_atomic(root + "/" + file, out);
  };
  add("train.csv", "train.csv");
  add("test.csv", "test_labels.csv");
}

}  // namespace

TEST_CASE("fit trains on images plus numeric features, --weights seeds fit and scores with tta-predict",
          "[integration][jobs][model]") {
  kg::test::TempDir dir;
  auto ds = kg::test::make_tiny_dataset(dir, 64, 12);
  auto recipe = dir.write("tiny.toml", kg::test::tiny_recipe(ds.root));
  std::string a = dir / "a";
  auto fit = kg::test::run_kgtrain({"fit", recipe, "train.epochs=1", "--run-dir", a, "--quiet"});
  INFO(fit.output);
  REQUIRE(fit.exit_code == 0);
  const std::string weights = a + "/checkpoints/best/model.safetensors";

  SECTION("feature columns reach the head through a BatchNorm (and an MLP)") {
    add_feature_column(ds.root);
    std::string b = dir / "features";
    auto r = kg::test::run_kgtrain(
        {"fit", recipe, "train.epochs=1", "data.feature_cols=[\"f\"]", "model.feature_hidden=[4]", "--run-dir", b});
    INFO(r.output);
    REQUIRE(r.exit_code == 0);
    CHECK(r.output.find("1 numeric features into the head") != std::string::npos);
    auto w = kg::model::read_safetensors(b + "/checkpoints/best/model.safetensors");
    CHECK(w.count("feature_bn.running_mean") == 1);
    CHECK(w.at("feature_mlp.0.weight").sizes() == c10::IntArrayRef{4, 1});
    CHECK(w.at("fc.weight").sizes() == c10::IntArrayRef{2, 32 + 4});  // 8 * width 4 pooled + 4 feature units
    auto pred = kg::test::run_kgtrain({"tta-predict", recipe, "data.feature_cols=[\"f\"]", "model.feature_hidden=[4]",
                                       "--checkpoint", b + "/checkpoints/best", "--run-dir", dir / "fpred", "--quiet"});
    INFO(pred.output);
    CHECK(pred.exit_code == 0);
  }

  SECTION("fit --weights loads the backbone and re-initialises a head of another shape") {
    auto r = kg::test::run_kgtrain(
        {"fit", recipe, "train.epochs=1", "model.head_hidden=[8]", "--weights", weights, "--run-dir", dir / "b"});
    INFO(r.output);
    REQUIRE(r.exit_code == 0);
    CHECK(r.output.find("--weights " + weights) != std::string::npos);
    CHECK(r.output.find("head re-initialised for the new task") != std::string::npos);
    CHECK(r.output.find("fc.weight [2, 32] vs model [2, 8]") != std::string::npos);
  }

  SECTION("tta-predict --weights predicts with the recipe's model and classes") {
    std::string sub = dir / "sub.csv";
    auto r = kg::test::run_kgtrain({"tta-predict", recipe, "data.test_csv=test_labels.csv", "--weights", weights,
                                    "--out", sub, "--run-dir", dir / "pred", "--quiet"});
    INFO(r.output);
    REQUIRE(r.exit_code == 0);
    CHECK(r.output.find("accuracy on") != std::string::npos);
    auto text = kg::read_file(sub);
    CHECK(std::count(text.begin(), text.end(), '\n') == 13);  // header + 12 rows
    // The same weights through --checkpoint give the same submission.
    std::string sub2 = dir / "sub2.csv";
    auto c = kg::test::run_kgtrain({"tta-predict", recipe, "data.test_csv=test_labels.csv", "--checkpoint",
                                    a + "/checkpoints/best", "--out", sub2, "--run-dir", dir / "pred2", "--quiet"});
    REQUIRE(c.exit_code == 0);
    CHECK(kg::read_file(sub2) == text);
  }

  SECTION("damaged or mismatching weights exit 3; an unknown model exits 2") {
    std::string cut = dir / "cut.safetensors";
    auto bytes = kg::read_file(weights);
    kg::write_file_atomic(cut, bytes.substr(0, bytes.size() - 100));
    auto r = kg::test::run_kgtrain({"tta-predict", recipe, "--weights", cut, "--run-dir", dir / "p3", "--quiet"});
    CHECK(r.exit_code == 3);
    CHECK(r.output.find("cut.safetensors") != std::string::npos);
    // The head must match for prediction: a 3-class head is refused.
    auto w = kg::model::read_safetensors(weights);
    w["fc.weight"] = torch::zeros({3, 32});
    w["fc.bias"] = torch::zeros({3});
    std::string other = dir / "three.safetensors";
    kg::model::write_safetensors(other, w);
    r = kg::test::run_kgtrain({"tta-predict", recipe, "--weights", other, "--run-dir", dir / "p4", "--quiet"});
    CHECK(r.exit_code == 3);
    CHECK(r.output.find("fc.weight") != std::string::npos);
    r = kg::test::run_kgtrain({"fit", recipe, "model.name=resnet1000", "--run-dir", dir / "p5", "--quiet"});
    CHECK(r.exit_code == 2);
    CHECK(r.output.find("unknown model") != std::string::npos);
  }
}

}  // namespace KG_UNITY_ID
}  // namespace
