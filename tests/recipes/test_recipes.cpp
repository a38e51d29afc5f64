// Every shipped recipe resolves, validates and passes --dry-run (against a tiny stand-in dataset),
// so recipes cannot rot.
#include <catch2/catch.hpp>

#include <filesystem>

#include "core/fs.h"

#include "support/fixtures.h"
#include "test_paths.h"

namespace fs = std::filesystem;

TEST_CASE("every shipped recipe resolves and dry-runs", "[integration][recipes]") {
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
    auto r = kg::test::run_kgtrain({"fit", e.path().string(), "data.root=" + ds.root, "cv.folds=2", "--dry-run"});
    INFO(r.output);
    CHECK(r.exit_code == 0);
    auto s = kg::test::run_kgtrain({"show", e.path().string()});
    CHECK(s.exit_code == 0);
    ++checked;
  }
  CHECK(checked >= 1);
}

TEST_CASE("show annotates each key with the layer that set it", "[integration][recipes]") {
  auto r = kg::test::run_kgtrain({"show", KGTRAIN_SOURCE_DIR "/recipes/fashion_mnist.toml", "optim.lr=1e-3", "env=kaggle"});
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
}

TEST_CASE("show --list --markdown documents every component", "[integration][recipes]") {
  auto r = kg::test::run_kgtrain({"show", "--list", "--markdown"});
  REQUIRE(r.exit_code == 0);
  for (auto s : {"`optim.lr`", "model `resnet9`", "transform `pad_crop`", "schedule `one_cycle`", "loss `cross_entropy`"})
    CHECK(r.output.find(s) != std::string::npos);
}

TEST_CASE("README's recipe reference is the registry's", "[integration][recipes]") {
  auto r = kg::test::run_kgtrain({"show", "--list", "--markdown"});
  REQUIRE(r.exit_code == 0);
  std::string readme = kg::read_file(KGTRAIN_SOURCE_DIR "/README.md");
  const std::string begin = "<!-- reference:begin -->\n", end = "<!-- reference:end -->";
  auto i = readme.find(begin), j = readme.find(end);
  REQUIRE(i != std::string::npos);
  REQUIRE(j != std::string::npos);
  INFO("run scripts/gen_reference.sh to regenerate README.md's reference");
  auto rstrip = [](std::string s) {
    while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
    return s;
  };
  CHECK(rstrip(readme.substr(i + begin.size(), j - i - begin.size())) == rstrip(r.output));
}
