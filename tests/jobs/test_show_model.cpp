// `kgtrain show --model` through the binary: the recipe's model built for its data, its summary and
// layer groups as a table and as JSON, and data.num_classes standing in when the data is absent.
#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include "support/fixtures.h"

namespace {
namespace KG_UNITY_ID {  // each test file's own names in a unity batch (CMakeLists.txt)

using nlohmann::json;

namespace {

json show_json(const std::vector<std::string>& args) {
  std::vector<std::string> a{"show"};
  a.insert(a.end(), args.begin(), args.end());
  a.push_back("--model");
  a.push_back("--json");
  auto r = kg::test::run_kgtrain(a);
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  return json::parse(r.output);
}

}  // namespace

TEST_CASE("show --model prints the recipe's model summary and layer groups", "[integration][jobs]") {
  kg::test::TempDir dir;
  auto ds = kg::test::make_tiny_dataset(dir, 24, 4);
  auto recipe = dir.write("tiny.toml", kg::test::tiny_recipe(ds.root));

  auto j = show_json({recipe});
  CHECK(j["schema_version"] == 1);
  CHECK(j["model"] == "resnet9");
  CHECK(j["task"] == "multiclass");
  CHECK(j["outputs"] == 2);  // "left" and "right" in train.csv
  CHECK(j["outputs_from"].get<std::string>().find("training table") != std::string::npos);
  const auto& s = j["summary"];
  CHECK(s["input"] == json({{"channels", 1}, {"height", 12}, {"width", 12}}));
  CHECK(s["training_memory"]["batch"] == 8);  // train.batch_size
  CHECK(s["gflops_per_image"].get<double>() > 0);
  CHECK(s["training_memory"]["activation_bytes"].get<int64_t>() > 0);
  std::vector<std::string> names;
  int64_t sum = 0;
  for (auto& g : j["layer_groups"]) {
    names.push_back(g["name"]);
    sum += g["parameters"].get<int64_t>();
    CHECK(g["trainable"] == true);
  }
  CHECK(names == std::vector<std::string>{"stem", "layer1", "layer2", "layer3", "head"});
  CHECK(sum == s["parameters"]["total"].get<int64_t>());
  // resnet9 width 4 on gray images, 2 classes: convs + BatchNorm affine + fc 32 -> 2.
  CHECK(s["parameters"]["total"] ==
        36 + 288 + 2 * 576 + 1152 + 4608 + 2 * 9216 + 2 * (4 + 8 + 16 + 16 + 32 + 64) + 32 * 2 + 2);

  SECTION("the table carries the same numbers") {
    auto r = kg::test::run_kgtrain({"show", recipe, "--model"});
    INFO(r.output);
    REQUIRE(r.exit_code == 0);
    CHECK(r.output.find("model resnet9: 2 outputs") != std::string::npos);
    CHECK(r.output.find("GFLOPs per image") != std::string::npos);
    CHECK(r.output.find("training memory at batch 8") != std::string::npos);
    CHECK(r.output.find("layer group") != std::string::npos);
    CHECK(r.output.find(std::to_string(sum)) != std::string::npos);
  }
  SECTION("overrides choose another model") {
    auto k = show_json({recipe, "model.name=resnet18", "~model.width", "model.small_input=true"});
    CHECK(k["model"] == "resnet18");
    CHECK(k["layer_groups"].size() == 6);  // stem, layer1..4, head
    CHECK(k["classifier"] == "fc");
  }
  SECTION("the optimizer state in the memory estimate is the recipe optimizer's") {
    const int64_t n = s["parameters"]["trainable"].get<int64_t>();
    CHECK(show_json({recipe, "optim.name=adamw"})["summary"]["training_memory"]["optimizer_bytes"] == 8 * n);
    CHECK(show_json({recipe, "optim.name=sgd",
                     "optim.momentum=0.9"})["summary"]["training_memory"]["optimizer_bytes"] == 4 * n);
    CHECK(show_json({recipe, "optim.name=sgd", "optim.momentum=0"})["summary"]["training_memory"]["optimizer_bytes"] ==
          0);
    auto r = kg::test::run_kgtrain({"show", recipe, "--model", "optim.name=sgd", "optim.momentum=0.9"});
    INFO(r.output);
    CHECK(r.output.find("+ sgd state ") != std::string::npos);
  }
  SECTION("--json alone belongs to --model") {
    CHECK(kg::test::run_kgtrain({"show", recipe, "--json"}).exit_code == 2);
  }
}

TEST_CASE("show --model without the data uses the recipe's data.num_classes, or says it is needed",
          "[integration][jobs]") {
  kg::test::TempDir dir;
  auto recipe = dir.write("nodata.toml", kg::test::tiny_recipe(dir / "absent"));

  auto r = kg::test::run_kgtrain({"show", recipe, "--model"});
  CHECK(r.exit_code == 3);
  CHECK(r.output.find("found no dataset") != std::string::npos);  // data::infer_classes's own message
  CHECK(r.output.find("set data.num_classes") != std::string::npos);

  auto j = show_json({recipe, "data.num_classes=7"});
  CHECK(j["outputs"] == 7);
  CHECK(j["outputs_from"].get<std::string>().find("recipe") != std::string::npos);

  auto b = show_json({recipe, "data.task=binary"});
  CHECK(b["outputs"] == 1);
  auto g = show_json({recipe, "data.task=regression", "data.label_cols=[\"a\", \"b\", \"c\"]", "data.image_size=16"});
  CHECK(g["outputs"] == 3);
  CHECK(g["summary"]["input"]["height"] == 16);
}

}  // namespace KG_UNITY_ID
}  // namespace
