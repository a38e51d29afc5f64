// The model a recipe trains, for commands that need the network but not the data pipeline
// (`show --model`, `bench-model`): its outputs come from the training table when the data is there,
// else from the recipe's own data.num_classes / data.task / data.label_cols.
#pragma once
#include <string>

#include "config/tree.h"
#include "data/table.h"
#include "model/model.h"

namespace kg::jobs {

struct RecipeModelInput {
  model::ModelContext ctx;   // data.channels, outputs, data.feature_cols, data.image_size (its last stage)
  data::ClassList classes;   // numbered "0".."n-1" when taken from the recipe
  std::string outputs_from;  // where the outputs came from, for the printout
};

// DataError (data::infer_classes's, plus a hint) when the data is absent and the recipe does not
// state the number of outputs.
RecipeModelInput recipe_model_input(const config::Tree& recipe);

}  // namespace kg::jobs
