// Every shipped recipe resolves, validates and passes --dry-run (against a tiny stand-in dataset),
// so recipes cannot rot.
#include <catch2/catch.hpp>

#include <filesystem>

#include <opencv2/core.hpp>

#include "core/fs.h"
#include "data/image_io.h"
#include "model/model.h"
#include "model/weights/safetensors.h"

#include "support/fixtures.h"
#include "support/text_fixtures.h"
#include "test_paths.h"

namespace {
namespace KG_UNITY_ID {  // each test file's own names in a unity batch (CMakeLists.txt)

namespace fs = std::filesystem;

namespace {

std::string str_key(const kg::config::Recipe& r, const std::string& key) {
  auto* e = r.tree().find(key);
  return e && e->value.is_string() ? e->value.get<std::string>() : "";
}
std::vector<std::string> list_key(const kg::config::Recipe& r, const std::string& key) {
  auto* e = r.tree().find(key);
  return e && e->value.is_array() ? e->value.get<std::vector<std::string>>() : std::vector<std::string>{};
}

// A regression stand-in laid out as the recipe reads it (id column, image folder and extension, one
// positive float per target column and feature column); the images are PNG bytes whatever the
// extension says (decoding sniffs the format). Returns the data root.
std::string make_regression_dataset(const kg::test::TempDir& dir, const kg::config::Recipe& r) {
  const std::string root = dir / "regression";
  std::string ext = str_key(r, "data.image_ext");
  if (!ext.empty() && ext[0] != '.') ext = "." + ext;
  std::vector<std::string> cols{str_key(r, "data.id_col")};
  for (auto& c : list_key(r, "data.label_cols")) cols.push_back(c);
  for (auto& c : list_key(r, "data.feature_cols")) cols.push_back(c);
  std::string csv;
  for (size_t j = 0; j < cols.size(); ++j) csv += (j ? "," : "") + cols[j];
  csv += "\n";
  for (int i = 0; i < 40; ++i) {
    const std::string id = "r" + std::to_string(i);
    cv::Mat m(28, 28, CV_8UC1, cv::Scalar(static_cast<double>(6 * i)));
    kg::data::write_png_atomic(root + "/" + str_key(r, "data.image_dir") + "/" + id + ext, m);
    csv += id;
    for (size_t j = 1; j < cols.size(); ++j) csv += "," + std::to_string(1.5 + 0.25 * i + static_cast<double>(j));
    csv += "\n";
  }
  kg::write_file_atomic(root + "/" + str_key(r, "data.train_csv"), csv);
  return root;
}

// ImageNet-shaped weights (3 channels, 1000 classes) for the recipe's model, as a timm export would
// be: loading them re-initialises the head and adapts the first conv to data.channels.
std::string make_pretrained_file(const kg::test::TempDir& dir, kg::config::Recipe r) {
  r = r.with({{"model.pretrained", ""}}, {});
  kg::model::ModelContext ctx;
  ctx.in_chans = 3;
  ctx.num_outputs = 1000;
  auto net = kg::model::build(r, ctx);
  const std::string file = dir / "pretrained.safetensors";
  kg::model::write_safetensors(file, kg::model::state_dict(*net));
  return file;
}

// A text stand-in laid out as a text recipe reads it: its id, text, feature and label columns (two classes) and, for
// cv.strategy = "column", its fold column (folds 0 and 1). Returns the data root.
std::string make_text_dataset(const kg::test::TempDir& dir, const kg::config::Recipe& r) {
  const std::string root = dir / "text";
  std::vector<std::string> cols{str_key(r, "data.id_col")};
  for (auto& c : list_key(r, "data.text_cols")) cols.push_back(c);
  const size_t texts = cols.size();
  for (auto& c : list_key(r, "data.feature_cols")) cols.push_back(c);
  const size_t features = cols.size();
  cols.push_back(str_key(r, "cv.fold_col").empty() ? "fold" : str_key(r, "cv.fold_col"));
  cols.push_back(list_key(r, "data.label_cols").at(0));
  std::string csv;
  for (size_t j = 0; j < cols.size(); ++j) csv += (j ? "," : "") + cols[j];
  csv += "\n";
  for (int i = 0; i < 40; ++i) {
    csv += "p" + std::to_string(i);
    for (size_t j = 1; j < texts; ++j) csv += i % 2 ? ",the quick brown fox" : ",a lazy dog sleeps";
    for (size_t j = texts; j < features; ++j) csv += "," + std::to_string(0.5 * i);
    csv += "," + std::to_string(i % 2) + (i % 2 ? ",libs" : ",doc") + "\n";
  }
  kg::write_file_atomic(root + "/" + str_key(r, "data.train_csv"), csv);
  return root;
}

}  // namespace

TEST_CASE("every shipped recipe resolves and dry-runs", "[integration][slow][recipes]") {
  kg::test::TempDir dir;
  // 28x28 gray images, integer labels 0..9, like Fashion-MNIST.
  auto ds = kg::test::make_tiny_dataset(dir, 40, 10, 28);
  std::string train = "id,label\n";
  for (int i = 0; i < 40; ++i) train += "tr" + std::to_string(i) + "," + std::to_string(i % 10) + "\n";
  dir.write("data/train.csv", train);
  int checked = 0;
  for (auto& e : fs::recursive_directory_iterator(KGTRAIN_SOURCE_DIR "/recipes")) {
    if (e.path().extension() != ".toml") continue;
    auto rel = fs::relative(e.path(), KGTRAIN_SOURCE_DIR "/recipes").string();
    if (rel.rfind("env/", 0) == 0 || rel.rfind("model/", 0) == 0) continue;  // layers, not recipes
    INFO(rel);
    // Inputs the tiny stand-in lacks: a numeric-target table for regression, a weights file for model.pretrained.
    const auto recipe = kg::test::resolve_recipe({e.path().string()}, {});
    const bool regression = str_key(recipe, "data.task") == "regression";
    const bool text = !list_key(recipe, "data.text_cols").empty();
    const bool pretrained = !text && !str_key(recipe, "model.pretrained").empty();
    std::vector<std::string> args{"fit", e.path().string(), "cv.folds=2", "--dry-run"};
    args.push_back("data.root=" + (text         ? make_text_dataset(dir, recipe)
                                   : regression ? make_regression_dataset(dir, recipe)
                                                : ds.root));
    if (pretrained) args.push_back("model.pretrained=" + make_pretrained_file(dir, recipe));
    // A text recipe's model folder: the tiny DeBERTa-v3-shaped one (config.json, weights, sentencepiece tokenizer).
    if (text) args.push_back("model.pretrained=" + kg::test::make_tiny_deberta(dir));
    auto r = kg::test::run_kgtrain(args);
    INFO(r.output);
    CHECK(r.exit_code == 0);
    if (regression) {
      CHECK(r.output.find("rows, regression") != std::string::npos);
      // Mixing needs class labels: refused, not silently dropped.
      args.push_back("mixup.mixup_alpha=0.4");
      auto m = kg::test::run_kgtrain(args);
      CHECK(m.exit_code == 2);
      CHECK(m.output.find("mixup / cutmix mix class labels") != std::string::npos);
    }
    if (pretrained) CHECK(r.output.find("head re-initialised for the new task") != std::string::npos);
    auto s = kg::test::run_kgtrain({"show", e.path().string()});
    CHECK(s.exit_code == 0);
    ++checked;
  }
  CHECK(checked >= 1);
}

TEST_CASE("show annotates each key with the layer that set it", "[integration][recipes]") {
  auto r =
      kg::test::run_kgtrain({"show", KGTRAIN_SOURCE_DIR "/recipes/fashion_mnist.toml", "optim.lr=1e-3", "env=kaggle"});
  REQUIRE(r.exit_code == 0);
  CHECK(r.output.find("optim.lr = 0.001  # command line") != std::string::npos);
  CHECK(r.output.find("paths.runs = \"/kaggle/working/runs\"  # env layer kaggle") != std::string::npos);
  CHECK(r.output.find("data.root = \"/kaggle/input/fashion_mnist\"") != std::string::npos);
  CHECK(r.output.find("fashion_mnist.toml:") != std::string::npos);
  CHECK(r.output.find("train.accum_steps = 1  # default") != std::string::npos);
}

TEST_CASE("config groups select a layer from the recipes folder", "[integration][recipes]") {
  auto r = kg::test::run_kgtrain({"show", KGTRAIN_SOURCE_DIR "/recipes/fashion_mnist.toml", "model=resnet9"});
  REQUIRE(r.exit_code == 0);
  CHECK(r.output.find("model.width = 64  # ") != std::string::npos);
  CHECK(r.output.find("model/resnet9.toml") != std::string::npos);
  // An option is a file of the group's folder, not a path out of it.
  auto up = kg::test::run_kgtrain({"show", KGTRAIN_SOURCE_DIR "/recipes/fashion_mnist.toml", "model=../fashion_mnist"});
  CHECK(up.exit_code == 2);
  CHECK(up.output.find("no option \"../fashion_mnist\" in config group model") != std::string::npos);
}

TEST_CASE("show --list --markdown documents every component", "[integration][recipes]") {
  auto r = kg::test::run_kgtrain({"show", "--list", "--markdown"});
  REQUIRE(r.exit_code == 0);
  for (auto s :
       {"`optim.lr`", "model `resnet9`", "transform `pad_crop`", "schedule `one_cycle`", "loss `cross_entropy`"})
    CHECK(r.output.find(s) != std::string::npos);
}

TEST_CASE("docs/reference.md is the registry's", "[integration][recipes]") {
  auto r = kg::test::run_kgtrain({"show", "--list", "--markdown"});
  REQUIRE(r.exit_code == 0);
  std::string readme = kg::read_file(KGTRAIN_SOURCE_DIR "/docs/reference.md");
  const std::string begin = "<!-- reference:begin -->\n", end = "<!-- reference:end -->";
  auto i = readme.find(begin), j = readme.find(end);
  REQUIRE(i != std::string::npos);
  REQUIRE(j != std::string::npos);
  INFO("run scripts/gen_reference.sh to regenerate docs/reference.md");
  auto rstrip = [](std::string s) {
    while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
    return s;
  };
  CHECK(rstrip(readme.substr(i + begin.size(), j - i - begin.size())) == rstrip(r.output));
}

}  // namespace KG_UNITY_ID
}  // namespace
