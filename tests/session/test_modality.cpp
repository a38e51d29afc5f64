// data.modality as an object (lib/session/modality.h): each recipe's samples are "image" or "text", and what a job
// may do with them is asked of that object, whose refusals name the key.
#include <catch2/catch.hpp>

#include "config/recipe.h"
#include "config/resolve.h"
#include "core/error.h"
#include "data/options.h"
#include "session/modality.h"

namespace {
namespace KG_UNITY_ID {  // each test file's own names in a unity batch (CMakeLists.txt)

using kg::session::Capability;
using kg::session::modality_of;

kg::config::Recipe recipe(const std::string& text) {
  return kg::config::Recipe::validate(kg::config::parse_toml_string(text, "r.toml"));
}

const char* kText = "[data]\ntext_cols = [\"text\"]\n";

TEST_CASE("modality: data.text_cols makes a recipe text, data.modality overrides auto", "[unit][session]") {
  CHECK(modality_of(recipe("")).name() == "image");
  CHECK(modality_of(recipe(kText)).name() == "text");
  CHECK(modality_of(recipe("[data]\nmodality = \"text\"\ntext_cols = [\"a\", \"b\"]\n")).name() == "text");
  CHECK_THROWS_WITH(recipe("[data]\nmodality = \"image\"\ntext_cols = [\"t\"]\n").get<kg::data::DataOptions>(),
                    Catch::Contains("data.modality = \"image\" but data.text_cols"));
  const auto text = recipe(kText);
  CHECK(modality_of(text).seq_len(text.get<kg::data::DataOptions>()) == 256);
  const auto image = recipe("");
  CHECK(modality_of(image).seq_len(image.get<kg::data::DataOptions>()) == 0);
}

TEST_CASE("modality: images can everything; text refuses the image-only options with the key", "[unit][session]") {
  for (auto c : {Capability::augment, Capability::mixup, Capability::device_cache, Capability::tta_views,
                 Capability::grad_cam, Capability::pack, Capability::show_batch, Capability::bench_data}) {
    CHECK(modality_of(recipe("")).can(c));
    CHECK_FALSE(modality_of(recipe(kText)).can(c));
  }
  // {a line under [data], what follows, the key the refusal names}: the same recipe with and without text_cols.
  const std::string image_only[][3] = {
      {"augment = [{ name = \"hflip\" }]\n", "", "data.augment"},
      {"cache = \"device\"\n", "", "data.cache = \"device\""},
      {"", "[mixup]\ncutmix_alpha = 1.0\n", "mixup / cutmix"},
      {"", "[tta]\nviews = [\"identity\", \"hflip\"]\n", "tta.views"},
  };
  for (const auto& [data_line, rest, key] : image_only) {
    INFO(data_line + rest);
    const auto text = recipe(std::string(kText) + data_line + rest);
    CHECK_THROWS_WITH(modality_of(text).check(text, "fit"), Catch::Contains(key) && Catch::Contains("has no images"));
    const auto image = recipe("[data]\n" + data_line + rest);
    CHECK_NOTHROW(modality_of(image).check(image, "fit"));
  }
  const auto views = recipe(std::string(kText) + "[tta]\nviews = [\"identity\", \"hflip\"]\n");
  CHECK_NOTHROW(modality_of(views).check(views, "lr-find"));  // only the commands that predict read tta.views
  CHECK_THROWS_AS(modality_of(recipe(kText)).require(Capability::pack, "pack", "packs image files"), kg::ConfigError);
  CHECK_THROWS_WITH(modality_of(recipe(kText)).require(Capability::pack, "pack", "packs image files"),
                    Catch::Contains("kgtrain pack packs image files; a text task"));
  CHECK_NOTHROW(modality_of(recipe("")).require(Capability::pack, "pack", "packs image files"));
}

TEST_CASE("modality: the input a checkpoint records, the data line's input and the TTA views", "[unit][session]") {
  const auto text = recipe(std::string(kText) + "max_length = 64\n");
  const auto& td = text.get<kg::data::DataOptions>();
  const kg::data::ImageGeometry g{32, 24, 3};
  CHECK(modality_of(text).input_json(td, g) == kg::config::json{{"text_cols", {"text"}}, {"max_length", 64}});
  CHECK(modality_of(text).describe_input(td) == "text text, up to 64 tokens");
  const auto image = recipe("[data]\nimage_size = [[0, 16], [0.5, [32, 24]]]\nchannels = 1\n");
  const auto& id = image.get<kg::data::DataOptions>();
  CHECK(modality_of(image).input_json(id, g) == kg::config::json{{"channels", 3}, {"height", 32}, {"width", 24}});
  CHECK(modality_of(image).describe_input(id) == "1x16x16 from 0%, 32x24 from 50%");
  kg::data::Table none;
  CHECK(modality_of(image).collator(image, none, 1) == nullptr);  // images: the loader's pipeline makes the batches

  // Prediction's views: tta.views for images; text predicts the identity whatever the recipe's default says.
  const auto flips = recipe("[tta]\nviews = [\"identity\", \"hflip\"]\n");
  CHECK(modality_of(flips).tta_views(flips, g).size() == 2);
  const auto text_views = modality_of(text).tta_views(text, g);
  REQUIRE(text_views.size() == 1);
  CHECK(text_views[0]->name() == "identity");
}

}  // namespace KG_UNITY_ID
}  // namespace
