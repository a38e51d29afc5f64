// The recipe in effect (session/effective_recipe.h). The weights' own preprocessing: a timm config.json beside
// model.pretrained sets what the recipe leaves unsaid (data.image_size, normalize's mean/std, center_crop's
// crop_pct/interpolation), with the config.json as the changed values' origin, and never what the recipe says.
#include <catch2/catch.hpp>

#include "config/resolve.h"
#include "config/validate.h"
#include "core/error.h"
#include "data/options.h"
#include "optim/param_groups.h"
#include "session/effective_recipe.h"
#include "train/options.h"
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

kg::session::EffectiveRecipe follow(const std::string& folder, const std::string& data) {
  auto recipe = kg::config::Recipe::validate(
      kg::config::parse_toml_string("[data]\nnum_classes = 10\n" + data +
                                        "\n[model]\nname = \"vit_tiny_patch16_224\"\npretrained = \"" + folder + "\"\n",
                                    "follow.toml"));
  return kg::session::follow_weights_preprocessing(recipe);
}

}  // namespace

TEST_CASE("a recipe silent on preprocessing follows the weights' config.json", "[unit][session]") {
  kg::test::TempDir dir;
  const std::string hub = hub_folder(dir, kAugreg);
  auto f = follow(hub, "augment = [{ name = \"hflip\" }, { name = \"center_crop\" }]");
  const auto& size = f.recipe.tree().at("data.image_size");
  CHECK(size.value == json::array({384, 320}));
  CHECK(size.origin.str() == hub + "/config.json");
  const json aug = f.recipe.tree().at("data.augment").value;
  REQUIRE(aug.size() == 3);  // normalize appended
  CHECK(aug[1].at("crop_pct") == 0.9);
  CHECK(aug[1].at("interpolation") == "cubic");
  CHECK(aug[2].at("name") == "normalize");
  CHECK(aug[2].at("mean") == json::array({0.5, 0.4, 0.3}));
  CHECK(aug[2].at("std") == json::array({0.2, 0.25, 0.3}));
  CHECK(f.recipe.tree().at("data.augment").inner.at("[2]").str() == hub + "/config.json");
  REQUIRE(f.notes.size() == 4);
  CHECK(f.notes[0] == "data.image_size = [384,320] (" + hub + "/config.json)");
  CHECK(f.notes[3].find("data.augment[2] (normalize) added, mean = [0.5, 0.4, 0.3], std = [0.2, 0.25, 0.3]") == 0);
}

TEST_CASE("what the recipe says wins over the weights' config.json", "[unit][session]") {
  kg::test::TempDir dir;
  const std::string hub = hub_folder(dir, kAugreg);
  auto f = follow(hub,
                  "image_size = 224\naugment = [{ name = \"center_crop\", crop_pct = 1.0 }, "
                  "{ name = \"normalize\", mean = [0.485, 0.456, 0.406] }]");
  CHECK(f.recipe.tree().at("data.image_size").value == 224);
  const json aug = f.recipe.tree().at("data.augment").value;
  REQUIRE(aug.size() == 2);
  CHECK(aug[0].at("crop_pct") == 1.0);
  CHECK(aug[0].at("interpolation") == "cubic");                    // unsaid: the weights'
  CHECK(aug[1].at("mean") == json::array({0.485, 0.456, 0.406}));  // said: the recipe's
  CHECK(aug[1].at("std") == json::array({0.2, 0.25, 0.3}));        // unsaid: the weights'
  CHECK(f.notes[0] == "data.image_size = 224 (follow.toml:3:14; the weights were made at [384,320])");

  // A preset is the recipe speaking for both.
  auto preset = follow(hub, "augment = [{ name = \"normalize\", preset = \"imagenet\" }]");
  CHECK_FALSE(preset.recipe.tree().at("data.augment").value[0].contains("mean"));
}

TEST_CASE("gray images take the average of the weights' mean and std", "[unit][session]") {
  kg::test::TempDir dir;
  auto f = follow(hub_folder(dir, kAugreg), "channels = 1\naugment = [{ name = \"normalize\" }]");
  const json n = f.recipe.tree().at("data.augment").value[0];
  CHECK(n.at("mean")[0].get<double>() == Approx(0.4));
  CHECK(n.at("std")[0].get<double>() == Approx(0.25));
}

TEST_CASE("no config.json, or one without pretrained_cfg: the recipe as it is", "[unit][session]") {
  kg::test::TempDir dir;
  dir.write("bare/model.safetensors", "x");
  auto bare = follow(dir / "bare/model.safetensors", "");
  CHECK(bare.notes.empty());
  CHECK(bare.recipe.tree().at("data.image_size").origin.kind == kg::config::Origin::Kind::Default);
  dir.write("plain/config.json", R"({"architecture": "vit_tiny_patch16_224"})");
  CHECK(follow(dir / "plain", "").notes.empty());
}

TEST_CASE("a pretrained_cfg value of the wrong type is an error naming the key", "[unit][session]") {
  kg::test::TempDir dir;
  CHECK_THROWS_WITH(follow(hub_folder(dir, R"({"crop_pct": "0.9"})"), ""),
                    Catch::Contains("config.json: pretrained_cfg.crop_pct: expected a number in (0, 1], got \"0.9\""));
  CHECK_THROWS_AS(follow(hub_folder(dir, R"({"mean": [0.5, -1, 0.5]})"), ""), kg::ConfigError);
  CHECK_THROWS_WITH(follow(hub_folder(dir, R"({"input_size": [224, 224]})"), ""),
                    Catch::Contains("pretrained_cfg.input_size: expected a list of 3 positive integers"));
  CHECK_THROWS_WITH(follow(hub_folder(dir, R"({"mean": [0.5], "std": [0.5, 0.5, 0.5]})"), ""),
                    Catch::Contains("mean has 1 values and std 3"));
}

TEST_CASE("effective_recipe resolves the multi-form keys, keeping where each was set", "[unit][session]") {
  auto recipe = kg::config::Recipe::validate(
      kg::config::parse_toml_string("[data]\nnum_classes = 10\n[train]\nbatch_size = \"auto\"\n[optim]\nlr = \"find\"\n"
                                    "[schedule]\nname = \"one_cycle\"\nwarmup_epochs = 0.5\n",
                                    "open.toml"));
  CHECK(kg::train::batch_size_is_auto(recipe));
  CHECK(kg::optim::lr_is_find(recipe));
  CHECK(kg::session::has_warmup(recipe));

  kg::session::Resolutions r;
  r.batch_size = 32;
  r.lr = 3e-4;
  r.smoke_warmup = true;
  const auto e = kg::session::effective_recipe(recipe, r).recipe;
  CHECK(e.get<kg::train::TrainOptions>().batch_size == 32);
  CHECK_FALSE(kg::train::batch_size_is_auto(e));
  CHECK(e.origin_of("train.batch_size").str() == "open.toml:4:14");
  const auto& lr = e.get<kg::optim::OptimOptions>().lr;
  REQUIRE(std::holds_alternative<double>(lr.form));
  CHECK(std::get<double>(lr.form) == 3e-4);
  CHECK(e.origin_of("optim.lr").str() == "open.toml:6:6");
  CHECK(e.tree().at("schedule.warmup_steps").value == 1);
  CHECK(e.tree().at("schedule.warmup_epochs").value == 0.0);
  CHECK(recipe.get<kg::optim::OptimOptions>().lr.is_find());  // the recipe resolved is unchanged

  // Nothing to resolve: the same recipe (no warm-up to cut, nothing set).
  kg::session::Resolutions smoke_only;
  smoke_only.smoke_warmup = true;
  auto plain = kg::config::Recipe::validate(kg::config::parse_toml_string("[data]\nnum_classes = 10\n", "p.toml"));
  CHECK_FALSE(kg::session::has_warmup(plain));
  CHECK(kg::session::effective_recipe(plain, smoke_only).recipe.origin_of("schedule.warmup_steps").kind ==
        kg::config::Origin::Kind::Default);
}

TEST_CASE("the multi-form keys decode to typed forms and write back as the recipe spelled them", "[unit][config]") {
  auto decode = [](const std::string& toml) {
    return kg::config::Recipe::validate(kg::config::parse_toml_string("[data]\nnum_classes = 10\n" + toml, "f.toml"));
  };
  const auto slice = decode("[optim]\nlr = [1e-5, 1e-3]\n").get<kg::optim::OptimOptions>().lr;
  REQUIRE(slice.slice());
  CHECK(slice.slice()->lo == 1e-5);
  CHECK(slice.str() == "[1e-05,0.001]");
  const auto sched = decode("image_size = [[0, 96], [0.5, [128, 112], 32]]\n").get<kg::data::DataOptions>();
  REQUIRE(sched.image_size.stages.size() == 2);
  CHECK(sched.image_size.stages[1].width == 112);
  CHECK(sched.image_size.stages[1].batch_size == 32);
  CHECK(json(sched.image_size) == json::parse("[[0.0, 96], [0.5, [128, 112], 32]]"));
  CHECK(json(decode("image_size = [64, 48]\n").get<kg::data::DataOptions>().image_size) == json::array({64, 48}));
  const auto cv = decode("[cv]\nfolds = 4\nfold = \"all\"\n").get<kg::data::CvOptions>();
  CHECK(cv.run_folds == std::vector<int64_t>{0, 1, 2, 3});
  CHECK(json(cv.fold) == "all");
  CHECK(decode("[cv]\nfold = [3, 1]\n").get<kg::data::CvOptions>().run_folds == std::vector<int64_t>{3, 1});
  CHECK_THROWS_WITH(decode("[optim]\nlr = [1e-3, 1e-5]\n"), Catch::Contains("0 < lo <= hi"));
  CHECK_THROWS_WITH(decode("[train]\nbatch_size = \"big\"\n"), Catch::Contains("or \"auto\""));
}

}  // namespace KG_UNITY_ID
}  // namespace
