// pad_crop: reflect-pad each side, then crop a random window back to data.image_size
// (the CIFAR-10 / DAWNBench augmentation).
#include <opencv2/core.hpp>

#include "core/error.h"
#include "data/transform.h"

namespace kg::data {
namespace {

struct PadCropOptions {
  int64_t pad = 4;                 ///< pixels of padding on each side before the random crop
  std::string mode = "reflect";    ///< padding: reflect | constant | edge
  double p = 1.0;                  ///< probability of applying
};

class PadCrop : public Transform {
 public:
  PadCrop(const PadCropOptions& o, const ImageGeometry& g) : o_(o), g_(g) {}
  bool random() const override { return true; }
  void apply(cv::Mat& img, Rng& rng) const override {
    // Draw every number even when skipped, so one transform's p never shifts another's stream.
    double u = rng.uniform();
    int pad = static_cast<int>(o_.pad);
    int dy = static_cast<int>(rng.below(static_cast<uint64_t>(img.rows + 2 * pad - g_.height + 1)));
    int dx = static_cast<int>(rng.below(static_cast<uint64_t>(img.cols + 2 * pad - g_.width + 1)));
    if (u >= o_.p) return;
    int border = o_.mode == "reflect" ? cv::BORDER_REFLECT_101 : o_.mode == "edge" ? cv::BORDER_REPLICATE : cv::BORDER_CONSTANT;
    cv::Mat padded;
    cv::copyMakeBorder(img, padded, pad, pad, pad, pad, border, cv::Scalar::all(0));
    img = padded(cv::Rect(dx, dy, static_cast<int>(g_.width), static_cast<int>(g_.height))).clone();
  }

 private:
  PadCropOptions o_;
  ImageGeometry g_;
};

config::Fields<PadCropOptions> pad_crop_fields() {
  config::Fields<PadCropOptions> f;
  f.field("pad", &PadCropOptions::pad, "padding in pixels on each side").min(0);
  f.field("mode", &PadCropOptions::mode, "padding mode").choices({"reflect", "constant", "edge"});
  f.field("p", &PadCropOptions::p, "probability of applying").range(0, 1);
  return f;
}
KG_REGISTER(transform_registry(), "pad_crop", "pad each side, then crop a random window of data.image_size",
            "[[data.augment]]\nname = \"pad_crop\"\npad = 2", pad_crop_fields(),
            [](const PadCropOptions& o, const ImageGeometry& g) -> TransformPtr { return std::make_unique<PadCrop>(o, g); });

}  // namespace
}  // namespace kg::data
