#include "jobs/model_setup.h"

namespace kg::jobs {

model::ModelContext model_context(const data::ImageGeometry& g, const data::ClassList& classes, int64_t feature_dim) {
  model::ModelContext ctx;
  ctx.in_chans = g.channels;
  ctx.num_outputs = classes.outputs();
  ctx.num_features = feature_dim;
  ctx.height = g.height;
  ctx.width = g.width;
  return ctx;
}

}  // namespace kg::jobs
