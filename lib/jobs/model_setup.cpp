#include "jobs/model_setup.h"

#include <filesystem>

#include "core/error.h"
#include "data/source.h"

namespace fs = std::filesystem;

namespace kg::jobs {

model::ModelContext model_context(const data::ImageGeometry& g, const data::ClassList& classes, int64_t feature_dim,
                                  const std::string& target_transform) {
  model::ModelContext ctx;
  ctx.regression = classes.task == data::Task::regression;
  ctx.target_transform = target_transform;
  ctx.in_chans = g.channels;
  ctx.num_outputs = classes.outputs();
  ctx.num_features = feature_dim;
  ctx.height = g.height;
  ctx.width = g.width;
  return ctx;
}

namespace {

// Whether the recipe's training data is on disk (its layout may still be broken: the source says so).
bool data_present(const data::DataOptions& d) {
  std::string fmt;
  try {
    fmt = data::resolve_format(d);  // "auto" throws when it finds no layout
  } catch (const DataError&) {
    return false;
  }
  std::error_code ec;
  if (fmt == "csv") return fs::is_regular_file(data::data_path(d, d.train_csv), ec);
  if (fmt == "folder") return fs::is_directory(data::data_path(d, d.image_dir), ec);
  if (fmt == "pack") return fs::is_regular_file(data::data_path(d, d.train_pack), ec);
  return true;  // another source: let it read (and report) its own layout
}

// What data::infer_classes would find, from the recipe alone; 0 when the recipe does not say.
int64_t stated_classes(const data::DataOptions& d, data::Task task) {
  const auto cols = static_cast<int64_t>(d.label_cols.size());
  switch (task) {
    case data::Task::regression:
      return cols;  // one output per target column
    case data::Task::binary:
      return 2;  // two classes, one output
    case data::Task::multilabel:
      if (cols > 1) return cols;  // one 0/1 column per label
      return d.num_classes.value_or(0);
    case data::Task::multiclass:
      return d.num_classes.value_or(0);
  }
  return 0;
}

}  // namespace

RecipeModelInput recipe_model_input(const config::Recipe& recipe) {
  const auto d = recipe.get<data::DataOptions>();
  RecipeModelInput r;
  if (data_present(d)) {
    r.classes = data::infer_classes(d);
    r.outputs_from = "the training table under " + d.root;
  } else {
    r.classes.task = data::parse_task(d.task);
    const int64_t n = stated_classes(d, r.classes.task);
    if (n <= 0) {
      try {
        data::infer_classes(d);  // its own message says what is missing
      } catch (const DataError& e) {
        throw DataError(std::string(e.what()) + "; to build the model without its data, set data.num_classes");
      }
    }
    KG_CHECK(n > 0, DataError, "no training data under ", d.root, " and data.num_classes is not set");
    const bool named_columns = r.classes.task == data::Task::regression ||
                               (r.classes.task == data::Task::multilabel && d.label_cols.size() > 1);
    r.classes.numeric = !named_columns;
    if (named_columns)
      r.classes.names = d.label_cols;
    else
      for (int64_t k = 0; k < n; ++k) r.classes.names.push_back(std::to_string(k));
    r.outputs_from = "the recipe (no training data under " + d.root + ")";
  }
  r.ctx = model_context(data::geometry(d), r.classes, static_cast<int64_t>(d.feature_cols.size()), d.target_transform);
  return r;
}

}  // namespace kg::jobs
