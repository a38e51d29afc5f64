// The weights' own preprocessing (model/preprocessing.h): a timm config.json beside model.pretrained sets what the
// recipe leaves unsaid (data.image_size, normalize's mean/std, center_crop's crop_pct/interpolation), with the
// config.json as the changed values' origin, and never what the recipe says.
#include <catch2/catch.hpp>

#include "config/resolve.h"
#include "config/validate.h"
#include "core/error.h"
#include "model/preprocessing.h"
#include "support/temp_dir.h"

namespace {
namespace KG_UNITY_ID {  // each test file's own names in a unity batch (CMakeLists.txt)

namespace {

using kg::config::json;

// A Hugging Face timm folder whose config.json has this pretrained_cfg (the weights file is never read here).
std::string hub_folder(const kg::test::TempDir& dir, const std::string& pretrained_cfg) {
  dir.write("hub/config.json", R"({"architecture": "vit_tiny_patch16_224.augreg_in21k", "num_classes": 1000,
    "pretrained_cfg": )" + pretrained_cfg +
                                   "}");
  return dir / "hub";
}

const std::string kAugreg = R"({"tag": "augreg_in21k", "input_size": [3, 384, 320], "interpolation": "bicubic",
  "crop_pct": 0.9, "crop_mode": "center", "mean": [0.5, 0.4, 0.3], "std": [0.2, 0.25, 0.3], "first_conv": "x"})";

kg::model::FollowedRecipe follow(const std::string& folder, const std::string& data) {
  auto recipe = kg::config::Recipe::validate(
      kg::config::parse_toml_string("[data]\nnum_classes = 10\n" + data +
                                        "\n[model]\nname = \"vit_tiny_patch16_224\"\npretrained = \"" + folder + "\"\n",
                                    "follow.toml"));
  return kg::model::follow_weights_preprocessing(recipe);
}

}  // namespace

TEST_CASE("a recipe silent on preprocessing follows the weights' config.json", "[unit][model]") {
  kg::test::TempDir dir;
  const std::string hub = hub_folder(dir, kAugreg);
  auto f = follow(hub, "augment = [{ name = \"hflip\" }, { name = \"center_crop\" }]");
  const auto& size = f.recipe.at("data.image_size");
  CHECK(size.value == json::array({384, 320}));
  CHECK(size.origin.str() == hub + "/config.json");
  const json aug = f.recipe.at("data.augment").value;
  REQUIRE(aug.size() == 3);  // normalize appended
  CHECK(aug[1].at("crop_pct") == 0.9);
  CHECK(aug[1].at("interpolation") == "cubic");
  CHECK(aug[2].at("name") == "normalize");
  CHECK(aug[2].at("mean") == json::array({0.5, 0.4, 0.3}));
  CHECK(aug[2].at("std") == json::array({0.2, 0.25, 0.3}));
  CHECK(f.recipe.at("data.augment").inner.at("[2]").str() == hub + "/config.json");
  REQUIRE(f.notes.size() == 4);
  CHECK(f.notes[0] == "data.image_size = [384,320] (" + hub + "/config.json)");
  CHECK(f.notes[3].find("data.augment[2] (normalize) added, mean = [0.5, 0.4, 0.3], std = [0.2, 0.25, 0.3]") == 0);
}

TEST_CASE("what the recipe says wins over the weights' config.json", "[unit][model]") {
  kg::test::TempDir dir;
  const std::string hub = hub_folder(dir, kAugreg);
  auto f = follow(hub,
                  "image_size = 224\naugment = [{ name = \"center_crop\", crop_pct = 1.0 }, "
                  "{ name = \"normalize\", mean = [0.485, 0.456, 0.406] }]");
  CHECK(f.recipe.at("data.image_size").value == 224);
  const json aug = f.recipe.at("data.augment").value;
  REQUIRE(aug.size() == 2);
  CHECK(aug[0].at("crop_pct") == 1.0);
  CHECK(aug[0].at("interpolation") == "cubic");                    // unsaid: the weights'
  CHECK(aug[1].at("mean") == json::array({0.485, 0.456, 0.406}));  // said: the recipe's
  CHECK(aug[1].at("std") == json::array({0.2, 0.25, 0.3}));        // unsaid: the weights'
  CHECK(f.notes[0] == "data.image_size = 224 (follow.toml:3:14; the weights were made at [384,320])");

  // A preset is the recipe speaking for both.
  auto preset = follow(hub, "augment = [{ name = \"normalize\", preset = \"imagenet\" }]");
  CHECK_FALSE(preset.recipe.at("data.augment").value[0].contains("mean"));
}

TEST_CASE("gray images take the average of the weights' mean and std", "[unit][model]") {
  kg::test::TempDir dir;
  auto f = follow(hub_folder(dir, kAugreg), "channels = 1\naugment = [{ name = \"normalize\" }]");
  const json n = f.recipe.at("data.augment").value[0];
  CHECK(n.at("mean")[0].get<double>() == Approx(0.4));
  CHECK(n.at("std")[0].get<double>() == Approx(0.25));
}

TEST_CASE("no config.json, or one without pretrained_cfg: the recipe as it is", "[unit][model]") {
  kg::test::TempDir dir;
  dir.write("bare/model.safetensors", "x");
  auto bare = follow(dir / "bare/model.safetensors", "");
  CHECK(bare.notes.empty());
  CHECK(bare.recipe.at("data.image_size").origin.kind == kg::config::Origin::Kind::Default);
  dir.write("plain/config.json", R"({"architecture": "vit_tiny_patch16_224"})");
  CHECK(follow(dir / "plain", "").notes.empty());
}

TEST_CASE("a pretrained_cfg value of the wrong type is an error naming the key", "[unit][model]") {
  kg::test::TempDir dir;
  CHECK_THROWS_WITH(follow(hub_folder(dir, R"({"crop_pct": "0.9"})"), ""),
                    Catch::Contains("config.json: pretrained_cfg.crop_pct: expected a number in (0, 1], got \"0.9\""));
  CHECK_THROWS_AS(follow(hub_folder(dir, R"({"mean": [0.5, -1, 0.5]})"), ""), kg::ConfigError);
  CHECK_THROWS_WITH(follow(hub_folder(dir, R"({"input_size": [224, 224]})"), ""),
                    Catch::Contains("pretrained_cfg.input_size: expected a list of 3 positive integers"));
  CHECK_THROWS_WITH(follow(hub_folder(dir, R"({"mean": [0.5], "std": [0.5, 0.5, 0.5]})"), ""),
                    Catch::Contains("mean has 1 values and std 3"));
}

}  // namespace KG_UNITY_ID
}  // namespace
