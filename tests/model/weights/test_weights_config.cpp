// Hugging Face's timm layout: a folder with config.json beside the weights is read as one unit, and config.json's
// architecture is held against model.name (TF-ported weights would otherwise load into the PyTorch network silently).
#include <catch2/catch.hpp>

#include <filesystem>

#include "core/error.h"
#include "core/fs.h"
#include "model/weights/weights.h"
#include "support/fixtures.h"
#include "support/errors.h"
#include "test_paths.h"

namespace {
namespace KG_UNITY_ID {  // each test file's own names in a unity batch (CMakeLists.txt)

namespace {

const std::string kGolden = KGTRAIN_SOURCE_DIR "/tests/golden/";

// A folder in the Hub's layout: config.json and the resnet9 width-4 weights under `weights_name`.
std::string hub_folder(kg::test::TempDir& dir, const std::string& name, const std::string& config,
                       const std::string& weights_name = "model.safetensors") {
  const std::string folder = dir / name;
  kg::make_directories(folder);
  kg::write_file_atomic(folder + "/config.json", config);
  const std::string src =
      weights_name == "model.safetensors" ? kGolden + "resnet9_w4.safetensors" : kGolden + "pth/resnet9_w4.pth";
  kg::write_file_atomic(folder + "/" + weights_name, kg::read_file(src));
  return folder;
}

}  // namespace

TEST_CASE("a Hub folder is read as one unit: its weights and its config.json", "[unit][model]") {
  kg::test::TempDir dir;
  const std::string cfg =
      R"({"architecture": "resnet9.kg_test", "num_classes": 10, "pretrained_cfg": {"mean": [0.5], "std": [0.25]},
          "label_names": [], "trained_by": "someone"})";
  for (const std::string file : {"model.safetensors", "pytorch_model.bin"}) {
    INFO(file);
    const std::string folder = hub_folder(dir, "hub_" + file, cfg, file);
    const auto w = kg::model::read_weights_for(folder, "resnet9");
    CHECK(w.tensors.size() == kg::model::read_safetensors(kGolden + "resnet9_w4.safetensors").size());
    REQUIRE(w.config);
    CHECK(w.config->architecture == "resnet9");
    CHECK(w.config->num_classes == 10);
    CHECK(w.source == folder + "/" + file + " (config.json: resnet9, 10 classes; not read: trained_by)");
    // The weights file named directly: its folder's config.json comes with it.
    CHECK(kg::model::read_weights(folder + "/" + file).config);
  }
  // A folder without the weights, and a file without a config.json beside it.
  kg::make_directories(dir / "empty");
  CHECK(kg::test::error_of<kg::CheckpointError>([&] {
          kg::model::read_weights(dir / "empty");
        }).find("without model.safetensors or pytorch_model.bin") != std::string::npos);
  CHECK_FALSE(kg::model::read_weights(kGolden + "pth/resnet9_w4.pth").config);
}

TEST_CASE("config.json's architecture must be model.name's: the tf_ port is named, not loaded", "[unit][model]") {
  kg::test::TempDir dir;
  const std::string tf = hub_folder(dir, "tf", R"({"architecture": "tf_efficientnet_b0.ns_jft_in1k"})");
  const auto e = kg::test::error_of<kg::ConfigError>([&] { kg::model::read_weights_for(tf, "efficientnet_b0"); });
  CHECK(e.find("model.name = \"efficientnet_b0\"") != std::string::npos);
  CHECK(e.find("these weights are tf_efficientnet_b0") != std::string::npos);
  CHECK(e.find("\"same\" padding") != std::string::npos);
  const std::string r50 = hub_folder(dir, "r50", R"({"architecture": "resnet50.a1_in1k", "num_classes": 1000})");
  CHECK(kg::test::error_of<kg::ConfigError>([&] {
          kg::model::read_weights_for(r50, "resnet9");
        }).find("set model.name = \"resnet50\"") != std::string::npos);
  CHECK_NOTHROW(kg::model::read_weights_for(r50, "resnet50"));  // the names are checked when they load
}

TEST_CASE("a transformers config.json is refused by name, not loaded by whatever names match", "[unit][model]") {
  kg::test::TempDir dir;
  const std::string vit = hub_folder(
      dir, "vit", R"({"model_type": "vit", "architectures": ["ViTForImageClassification"], "hidden_size": 768})");
  const auto e = kg::test::error_of<kg::ConfigError>([&] { kg::model::read_weights_for(vit, "resnet9"); });
  CHECK(e.find(vit + "/config.json is a transformers config.json") != std::string::npos);
  CHECK(e.find("model_type \"vit\", architectures ViTForImageClassification") != std::string::npos);
  CHECK(e.find("does not build vit as an image model") != std::string::npos);
  CHECK(e.find("model.name = \"resnet9\"") != std::string::npos);
  // architectures alone says it too; the file read for its own sake (show, the report) is fine
  const std::string only = hub_folder(dir, "only", R"({"architectures": ["FancyNetModel"]})");
  CHECK(kg::test::error_of<kg::ConfigError>([&] {
          kg::model::read_weights_for(only, "resnet9");
        }).find("(architectures FancyNetModel): kgtrain does not build FancyNetModel") != std::string::npos);
  const auto w = kg::model::read_weights(vit);
  REQUIRE(w.config);
  CHECK(w.config->str() == "config.json: transformers' vit; not read: hidden_size");
}

TEST_CASE("a config.json of the wrong form is a usage error naming the key", "[unit][model]") {
  kg::test::TempDir dir;
  const std::vector<std::pair<std::string, std::string>> bad{
      {R"({"architecture": 5})", "architecture: expected a string"},
      {R"({"num_classes": "ten"})", "num_classes: expected an integer"},
      {R"({"pretrained_cfg": [1]})", "pretrained_cfg: expected an object"},
      {R"({"model_type": 3})", "model_type: expected a string"},
      {R"({"architectures": "BertModel"})", "architectures: expected a list of strings"},
      {R"([1, 2])", "expected a JSON object"},
      {"{architecture", "not JSON"}};
  int n = 0;
  for (const auto& [text, want] : bad) {
    INFO(text);
    const std::string folder = hub_folder(dir, "bad" + std::to_string(n++), text);
    const auto e = kg::test::error_of<kg::ConfigError>([&] { kg::model::read_weights(folder); });
    CHECK(e.find(folder + "/config.json") != std::string::npos);
    CHECK(e.find(want) != std::string::npos);
  }
}

TEST_CASE("fit --weights takes a Hub folder; a model.name it was not trained for exits 2", "[integration][model]") {
  kg::test::TempDir dir;
  auto ds = kg::test::make_tiny_dataset(dir, 24, 4);
  auto recipe = dir.write("tiny.toml", kg::test::tiny_recipe(ds.root));
  const std::string ok = hub_folder(dir, "ok", R"({"architecture": "resnet9", "num_classes": 10})");
  auto r = kg::test::run_kgtrain({"fit", recipe, "--weights", ok, "--smoke", "--run-dir", dir / "run"});
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  CHECK(r.output.find("(config.json: resnet9, 10 classes)") != std::string::npos);
  const std::string other = hub_folder(dir, "other", R"({"architecture": "convnext_tiny.fb_in22k"})");
  auto m = kg::test::run_kgtrain({"show", recipe, "model.pretrained=" + other, "--model"});
  CHECK(m.exit_code == 2);
  CHECK(m.output.find("these weights are convnext_tiny") != std::string::npos);
  // a transformers folder (here: a BERT's config.json beside resnet9's weights) exits 2 naming its model_type
  const std::string bert = hub_folder(dir, "bert", R"({"model_type": "bert", "architectures": ["BertModel"]})");
  auto t = kg::test::run_kgtrain({"fit", recipe, "--weights", bert, "--smoke", "--run-dir", dir / "run_bert"});
  CHECK(t.exit_code == 2);
  CHECK(t.output.find("model_type \"bert\"") != std::string::npos);
}

}  // namespace KG_UNITY_ID
}  // namespace
