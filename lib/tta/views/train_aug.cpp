// train_aug: fastai's TTA (Learner.tta): n passes over the data with the training augmentation
// (data.augment, a different seed per pass), averaged, then mixed with the plain prediction:
//   lerp(mean_aug, identity, beta) = (1 - beta) * mean_aug + beta * identity.
// The job runs the passes; the view only carries n and beta.
#include "tta/view.h"

namespace kg::tta {
namespace {

// Keys of the train_aug TTA view (tta.views); each field's doc is in train_aug_fields() below and docs/reference.md.
struct TrainAugOptions {
  int64_t n = 4;
  double beta = 0.25;
};

class TrainAugView : public View {
 public:
  explicit TrainAugView(const TrainAugOptions& o) : o_(o) {}
  std::string name() const override { return "train_aug"; }
  int64_t count() const override { return o_.n; }
  std::string label(int64_t i) const override { return "train_aug/" + std::to_string(i); }
  at::Tensor apply(const at::Tensor& x, int64_t) const override { return x; }
  bool uses_train_pipeline() const override { return true; }
  double beta() const override { return o_.beta; }

 private:
  TrainAugOptions o_;
};

config::Fields<TrainAugOptions> train_aug_fields() {
  config::Fields<TrainAugOptions> f;
  f.field("n", &TrainAugOptions::n, "passes with the training augmentation (data.augment), one seed each").min(1);
  f.field("beta", &TrainAugOptions::beta,
          "weight of the plain (identity) prediction: (1 - beta) * mean of the passes + beta * identity (fastai)")
      .range(0, 1);
  return f;
}

KG_REGISTER(
    view_registry(), "train_aug",
    "fastai TTA: n passes with the training augmentation, averaged, then lerp toward the plain prediction by beta",
    "[tta]\nviews = [{ name = \"train_aug\", n = 4, beta = 0.25 }]", train_aug_fields(),
    [](const TrainAugOptions& o, const data::ImageGeometry&) -> ViewPtr { return std::make_unique<TrainAugView>(o); });

}  // namespace
}  // namespace kg::tta
