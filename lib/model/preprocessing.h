// The weights' own preprocessing: a timm config.json beside model.pretrained (model/weights/weights_config.h) says what
// the weights were trained on (mean and std, input size, eval crop and interpolation); the recipe follows it wherever
// the recipe itself is silent, as timm's resolve_data_config does, and says which value came from where.
#pragma once
#include <string>
#include <vector>

#include "config/recipe.h"

namespace kg::model {

struct FollowedRecipe {
  config::Recipe recipe;
  std::vector<std::string> notes;  // one line a decision: "data.image_size = [224, 224] (.../config.json)"
};

// The recipe with model.pretrained's config.json applied where the recipe is silent:
//   data.image_size (left at its default)       <- input_size's height and width
//   a normalize transform without mean / std   <- mean and std (1 channel: their averages); none in data.augment:
//                                                 one is appended
//   a center_crop without crop_pct / interpolation <- crop_pct / interpolation (bicubic -> cubic)
// Each changed value's origin is the config.json, so `kgtrain show` and the run's recipe.toml name it too. The recipe
// as it is (no notes) when model.pretrained is unset or has no config.json with pretrained_cfg.
FollowedRecipe follow_weights_preprocessing(const config::Recipe& recipe);

}  // namespace kg::model
