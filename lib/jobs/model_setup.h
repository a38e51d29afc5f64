// What fit, tta-predict and the benches share when they build a model for a data set.
#pragma once
#include <cstdint>

#include "data/options.h"
#include "data/table.h"
#include "model/model.h"

namespace kg::jobs {

// The model's context from the data: input channels and size, outputs of the task, numeric features.
model::ModelContext model_context(const data::ImageGeometry& g, const data::ClassList& classes, int64_t feature_dim);

}  // namespace kg::jobs
