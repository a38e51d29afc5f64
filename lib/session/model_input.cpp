#include "session/model_input.h"

#include "data/source.h"
#include "session/modality.h"

namespace kg::session {

model::ModelContext model_context(const data::ImageGeometry& g, const data::ClassList& classes, int64_t feature_dim,
                                  const std::string& target_transform, int64_t seq_len) {
  model::ModelContext ctx;
  ctx.seq_len = seq_len;
  ctx.regression = classes.task == data::Task::regression;
  ctx.target_transform = target_transform;
  ctx.in_chans = g.channels;
  ctx.num_outputs = classes.outputs();
  ctx.num_features = feature_dim;
  ctx.height = g.height;
  ctx.width = g.width;
  return ctx;
}

RecipeModelInput recipe_model_input(const config::Recipe& recipe) {
  const auto& d = recipe.get<data::DataOptions>();
  auto stated = data::classes_for_model(d);
  RecipeModelInput r;
  r.classes = std::move(stated.classes);
  r.outputs_from = std::move(stated.from);
  r.ctx = model_context(data::geometry(d), r.classes, static_cast<int64_t>(d.feature_cols.size()), d.target_transform,
                        modality_of(d).seq_len(d));
  return r;
}

}  // namespace kg::session
