// random_resized_crop: crop a random area fraction and aspect ratio of the decoded image, then resize
// it to data.image_size (torchvision RandomResizedCrop.get_params, "Going deeper with convolutions").
// Always draws 1 + 10 * 4 numbers. At evaluation the pipeline resizes the whole image instead.
#include <algorithm>
#include <cmath>

#include <opencv2/core.hpp>

#include "core/error.h"
#include "data/transform.h"
#include "data/transforms/common.h"

namespace kg::data {
namespace {

// Keys of transform random_resized_crop; field docs: random_resized_crop_fields() below, docs/reference.md.
struct RandomResizedCropOptions {
  std::vector<double> scale{0.08, 1.0};
  std::vector<double> ratio{3.0 / 4.0, 4.0 / 3.0};
  std::string interpolation = "auto";
  double p = 1.0;
};

class RandomResizedCrop : public Transform {
 public:
  RandomResizedCrop(const RandomResizedCropOptions& o, const ImageGeometry& g)
      : o_(o), h_(static_cast<int>(g.height)), w_(static_cast<int>(g.width)) {}
  bool random() const override { return true; }
  bool sizes_output() const override { return true; }
  bool plans_window() const override { return true; }
  Window plan_window(int height, int width, Rng& rng) const override {
    double u = rng.uniform();
    cv::Rect box = window(height, width, rng);
    return u < o_.p ? Window{box.x, box.y, box.width, box.height} : Window{0, 0, width, height};
  }
  void apply_window(cv::Mat& img, const Window& win, double sx, double sy, int ox, int oy) const override {
    // The window in the (possibly reduced, possibly already cropped) image.
    const Window scaled = scale_window(win, sx, sy, img.cols + ox, img.rows + oy);
    const cv::Rect box(scaled.x - ox, scaled.y - oy, scaled.w, scaled.h);
    if (box != cv::Rect(0, 0, img.cols, img.rows)) img = img(box & cv::Rect(0, 0, img.cols, img.rows)).clone();
    transforms::resize_image(img, h_, w_, o_.interpolation);
  }
  void apply(cv::Mat& img, Rng& rng) const override {
    apply_window(img, plan_window(img.rows, img.cols, rng), 1, 1, 0, 0);
  }

 private:
  cv::Rect window(int height, int width, Rng& rng) const {
    const double area = static_cast<double>(height) * width;
    const double log_lo = std::log(o_.ratio[0]), log_hi = std::log(o_.ratio[1]);
    cv::Rect found;
    bool ok = false;
    for (int attempt = 0; attempt < 10; ++attempt) {
      double target_area = area * rng.uniform(o_.scale[0], o_.scale[1]);
      double aspect = std::exp(rng.uniform(log_lo, log_hi));
      double ui = rng.uniform(), uj = rng.uniform();
      if (ok) continue;  // keep drawing: the count of draws is fixed
      int w = transforms::round_even(std::sqrt(target_area * aspect));
      int h = transforms::round_even(std::sqrt(target_area / aspect));
      if (0 < w && w <= width && 0 < h && h <= height) {
        int i = static_cast<int>(ui * (height - h + 1)), j = static_cast<int>(uj * (width - w + 1));
        found = cv::Rect(j, i, w, h);
        ok = true;
      }
    }
    if (ok) return found;
    // Fallback to a central crop clamped to the ratio bounds.
    double in_ratio = static_cast<double>(width) / height;
    int w = width, h = height;
    if (in_ratio < o_.ratio[0]) {
      h = std::clamp(transforms::round_even(w / o_.ratio[0]), 1, height);
    } else if (in_ratio > o_.ratio[1]) {
      w = std::clamp(transforms::round_even(h * o_.ratio[1]), 1, width);
    }
    return cv::Rect((width - w) / 2, (height - h) / 2, w, h);
  }

  RandomResizedCropOptions o_;
  int h_, w_;
};

config::Fields<RandomResizedCropOptions> random_resized_crop_fields() {
  config::Fields<RandomResizedCropOptions> f;
  f.field("scale", &RandomResizedCropOptions::scale, "[lo, hi] range of the cropped fraction of the image area")
      .size(2)
      .min(0, true)
      .max(1)
      .check(transforms::check_lo_hi);
  f.field("ratio", &RandomResizedCropOptions::ratio,
          "[lo, hi] range of the crop's aspect ratio width / height (log-uniform)")
      .size(2)
      .positive()
      .check(transforms::check_lo_hi);
  f.field("interpolation", &RandomResizedCropOptions::interpolation, "auto = area when shrinking, linear when growing")
      .choices(transforms::resize_interpolations());
  f.field("p", &RandomResizedCropOptions::p, "probability of cropping (otherwise the whole image is resized)")
      .range(0, 1);
  return f;
}
KG_TRANSFORMS_NEED_OPENCV("random_resized_crop");

KG_REGISTER(
    transform_registry(), "random_resized_crop",
    "crop a random area fraction and aspect ratio, resize it to data.image_size (torchvision RandomResizedCrop)",
    "[[data.augment]]\nname = \"random_resized_crop\"\nscale = [0.35, 1.0]", random_resized_crop_fields(),
    [](const RandomResizedCropOptions& o, const ImageGeometry& g) -> TransformPtr {
      return std::make_unique<RandomResizedCrop>(o, g);
    });

}  // namespace
}  // namespace kg::data
