// What fit, tta-predict, show --model and bench-model share when they build a model: its context from
// the data, or (show --model, bench-model: no data pipeline) from the recipe when the data is absent.
#pragma once
#include <cstdint>
#include <string>

#include "config/recipe.h"
#include "data/options.h"
#include "data/table.h"
#include "model/model.h"

namespace kg::session {

// The model's context from the data: input channels and size, outputs of the task, numeric features,
// data.target_transform (regression).
// `seq_len`: data.max_length for a text model (0: an image model).
model::ModelContext model_context(const data::ImageGeometry& g, const data::ClassList& classes, int64_t feature_dim,
                                  const std::string& target_transform, int64_t seq_len = 0);

// The model a recipe trains: outputs from the training table when the data is there, else from the
// recipe's own data.num_classes / data.task / data.label_cols.
struct RecipeModelInput {
  model::ModelContext ctx;   // data.channels, outputs, data.feature_cols, data.image_size (its last stage)
  data::ClassList classes;   // numbered "0".."n-1" when taken from the recipe
  std::string outputs_from;  // where the outputs came from, for the printout
};

// DataError (data::infer_classes's, plus a hint) when the data is absent and the recipe does not
// state the number of outputs.
RecipeModelInput recipe_model_input(const config::Recipe& recipe);

}  // namespace kg::session
