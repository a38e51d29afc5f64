// Test-time augmentation views: batch-level transforms of normalized [B, C, H, W] batches, each
// registered under its recipe name (tta.views = ["identity", "hflip", { name = "five_crop", size = 200 }]),
// and the [tta] recipe section. Merging the views' outputs is tta/merge.h.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <ATen/core/Tensor.h>

#include "config/registry.h"
#include "config/recipe.h"
#include "data/options.h"

namespace kg::tta {

// The [tta] recipe section; field names are the recipe keys.
// Recipe section [tta]; each field's doc is in view_fields() (tta/view.cpp) and docs/reference.md.
struct TtaOptions {
  static TtaOptions load(const config::Tree& recipe);  // recipe.get<TtaOptions>() decodes it once
  config::json views = config::json::array({"identity"});
  std::string merge = "mean";
  std::string weights = "best";
  config::json threshold = 0.5;
  std::string output = "auto";
};
// tta.threshold as one value per output (a number repeated, or the per-class list); ConfigError naming
// tta.threshold when a list has the wrong length.
std::vector<double> thresholds(const TtaOptions& o, int64_t outputs);

class View {
 public:
  virtual ~View() = default;
  virtual std::string name() const = 0;            // the registered name, e.g. "d4"
  virtual int64_t count() const = 0;               // sub-views per pass (identity 1, d4 8, ten_crop 10, ...)
  virtual std::string label(int64_t i) const = 0;  // "d4/rot90_hflip", "multi_scale/320", "train_aug/2"
  // The i-th view of a batch x [B, C, H, W] (normalized, any device, any float dtype). The spatial size
  // may change (multi_scale, five_crop with resize = false): models with global pooling accept it.
  virtual at::Tensor apply(const at::Tensor& x, int64_t i) const = 0;
  // train_aug only: the job runs count() passes over the data with the TRAINING augmentation pipeline
  // (a different seed per pass), averages them, then lerps with the identity prediction:
  //   result = (1 - beta) * mean(aug) + beta * identity   (fastai Learner.tta: torch.lerp(aug, preds, beta)).
  virtual bool uses_train_pipeline() const { return false; }
  virtual double beta() const { return 0; }
};
using ViewPtr = std::unique_ptr<View>;

using ViewRegistry = Registry<ViewPtr(const data::ImageGeometry&)>;
ViewRegistry& view_registry();  // kind "tta_view"

// Builds tta.views for images of geometry g. ConfigError naming the entry ("tta.views[2]"): an unknown
// name (with "did you mean"), an unknown or bad option, a view that cannot apply to g (d4 on a
// non-square input, a crop larger than the image).
std::vector<ViewPtr> build_views(const config::Recipe& recipe, const data::ImageGeometry& g);
// The same from a views array; `key` names it in messages.
std::vector<ViewPtr> build_views(const config::json& views, const data::ImageGeometry& g,
                                 const std::string& key = "tta.views");

// Problems of a tta.views value (empty when fine), each starting with `key` + "[i]" (+ ".option").
std::vector<std::string> view_problems(const config::json& views, const std::string& key = "tta.views");

// Every sub-view of `views` in order: entry index, sub-view index and a label unique in the list
// (a repeated label gets "#2", "#3", ...).
struct SubView {
  size_t view = 0;
  int64_t index = 0;
  std::string label;
};
std::vector<SubView> expand(const std::vector<ViewPtr>& views);

// Bilinear resize of [B, C, H, W] to h x w (align_corners = false, no antialias: F.interpolate's
// default); returns x itself at its own size. Non-float CPU inputs are resized in float32.
at::Tensor resize_bilinear(const at::Tensor& x, int64_t h, int64_t w);

}  // namespace kg::tta
