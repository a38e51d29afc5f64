// The recipe in effect: what a validated recipe leaves to kgtrain, settled in one step, effective_recipe(). Each
// resolution makes a new recipe (config::Recipe::resolved / amended / with), so every key keeps where it was set and
// `kgtrain show`, recipe.toml and error messages name the source:
//   model.pretrained's config.json   data.image_size and data.augment's normalize / center_crop where the recipe is
//                                    silent, as timm's resolve_data_config does (every command, app/command.cpp)
//   train.batch_size = "auto"         the search's batch size (session/auto_batch.h: fit, lr-find, bench)
//   optim.lr = "find"                 the finder's lr (fit, once jobs/lr_find.h has run; bench's stand-in)
//   --smoke                           a warm-up in epochs or steps cut to 1 update (fit and lr-find train 2)
// Jobs read typed options from the result (recipe.get<>()); none reads a multi-form key's raw value.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "config/recipe.h"

namespace kg::session {

struct Resolutions {
  bool follow_weights = false;        // apply model.pretrained's config.json (follow_weights_preprocessing)
  std::optional<int64_t> batch_size;  // train.batch_size = "auto": the search's choice
  std::optional<double> lr;           // optim.lr = "find": the finder's lr
  bool smoke_warmup = false;          // --smoke: schedule.warmup_steps = 1, warmup_epochs = 0 (when a warm-up is set)
};

struct EffectiveRecipe {
  config::Recipe recipe;
  std::vector<std::string> notes;  // one line a decision: "data.image_size = [224, 224] (.../config.json)"
};

// `recipe` with each resolution of `r` applied, in the order above.
EffectiveRecipe effective_recipe(const config::Recipe& recipe, const Resolutions& r);

// The recipe with model.pretrained's config.json applied where the recipe is silent:
//   data.image_size (left at its default)       <- input_size's height and width
//   a normalize transform without mean / std   <- mean and std (1 channel: their averages); none in data.augment:
//                                                 one is appended
//   a center_crop without crop_pct / interpolation <- crop_pct / interpolation (bicubic -> cubic)
// Each changed value's origin is the config.json. The recipe as it is (no notes) when model.pretrained is unset or
// has no config.json with pretrained_cfg.
EffectiveRecipe follow_weights_preprocessing(const config::Recipe& recipe);

// A schedule warm-up (schedule.warmup_steps or warmup_epochs above 0) is set in `recipe`.
bool has_warmup(const config::Recipe& recipe);

}  // namespace kg::session
