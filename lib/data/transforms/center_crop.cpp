// center_crop: the central data.image_size window of the decoded image, padded with `fill` where
// the image is smaller (torchvision CenterCrop). With crop_pct < 1 the image is first scaled to cover
// image_size / crop_pct, as timm's eval transform does (e.g. 224 / 0.875 = 256).
#include <cmath>

#include <opencv2/core.hpp>

#include "core/error.h"
#include "data/transform.h"
#include "data/transforms/common.h"

namespace kg::data {
namespace {

// Keys of transform center_crop; each field's doc is in center_crop_fields() below and docs/reference.md.
struct CenterCropOptions {
  double crop_pct = 1.0;
  std::string interpolation = "auto";
  double fill = 0;
};

class CenterCrop : public Transform {
 public:
  CenterCrop(const CenterCropOptions& o, const ImageGeometry& g)
      : o_(o), h_(static_cast<int>(g.height)), w_(static_cast<int>(g.width)) {}
  bool random() const override { return false; }
  bool sizes_output() const override { return true; }
  void apply(cv::Mat& img, Rng&) const override {
    if (o_.crop_pct < 1.0) {
      // timm: scale_size = floor(img_size / crop_pct), then Resize on the shorter side.
      int sh = static_cast<int>(std::floor(h_ / o_.crop_pct)), sw = static_cast<int>(std::floor(w_ / o_.crop_pct));
      cv::Size s = transforms::cover_size(img.size(), sh, sw);
      transforms::resize_image(img, s.height, s.width, o_.interpolation);
    }
    transforms::center_crop(img, h_, w_, o_.fill);
  }

 private:
  CenterCropOptions o_;
  int h_, w_;
};

config::Fields<CenterCropOptions> center_crop_fields() {
  config::Fields<CenterCropOptions> f;
  f.field("crop_pct", &CenterCropOptions::crop_pct,
          "fraction of the scaled image kept: below 1, first scale the image to cover image_size / crop_pct (timm "
          "eval); 1 = crop the image as it is")
      .min(0, true)
      .max(1);
  f.field("interpolation", &CenterCropOptions::interpolation,
          "scaling for crop_pct < 1; auto = area when shrinking, linear when growing")
      .choices(transforms::resize_interpolations());
  f.field("fill", &CenterCropOptions::fill,
          "border value where the image is smaller (0..255 on 8-bit images, as given on float ones)");
  return f;
}
KG_TRANSFORMS_NEED_OPENCV("center_crop");

KG_REGISTER(transform_registry(), "center_crop",
            "crop the central data.image_size window (after scaling to image_size / crop_pct)",
            "[[data.augment]]\nname = \"center_crop\"\ncrop_pct = 0.875", center_crop_fields(),
            [](const CenterCropOptions& o, const ImageGeometry& g) -> TransformPtr {
              return std::make_unique<CenterCrop>(o, g);
            });

}  // namespace
}  // namespace kg::data
