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

}  // namespace KG_UNITY_ID
}  // namespace
