// pad_crop: reflect-pad each side, then crop a random window back to data.image_size
// (the CIFAR-10 / DAWNBench augmentation).
#include <algorithm>

#if KG_WITH_OPENCV
#include <opencv2/core.hpp>
#endif

#include "core/error.h"
#include "data/transform.h"

namespace kg::data {
namespace {

// Keys of transform pad_crop; each field's doc is in pad_crop_fields() below and docs/reference.md.
struct PadCropOptions {
  int64_t pad = 4;
  std::string mode = "reflect";
  double p = 1.0;
};

class PadCrop : public Transform {
 public:
  PadCrop(const PadCropOptions& o, const ImageGeometry& g) : o_(o), g_(g) {}
  bool random() const override { return true; }
  void apply(Image& img, Rng& rng) const override {
#if !KG_WITH_OPENCV
    // Without OpenCV the pipeline's images are at data.image_size already (nothing resizes); the index
    // map draws what the OpenCV version below draws and pads the same way.
    apply_index_map(*this, img, rng);
#else
    // Draw every number even when skipped, so one transform's p never shifts another's stream.
    double u = rng.uniform();
    int pad = static_cast<int>(o_.pad);
    int dy = static_cast<int>(rng.below(static_cast<uint64_t>(img.rows + 2 * pad - g_.height + 1)));
    int dx = static_cast<int>(rng.below(static_cast<uint64_t>(img.cols + 2 * pad - g_.width + 1)));
    if (u >= o_.p) return;
    int border = o_.mode == "reflect" ? cv::BORDER_REFLECT_101
                 : o_.mode == "edge"  ? cv::BORDER_REPLICATE
                                      : cv::BORDER_CONSTANT;
    cv::Mat padded;
    cv::copyMakeBorder(img, padded, pad, pad, pad, pad, border, cv::Scalar::all(0));
    img = padded(cv::Rect(dx, dy, static_cast<int>(g_.width), static_cast<int>(g_.height))).clone();
#endif
  }
  bool has_index_map() const override { return true; }
  void index_map(Rng& rng, int64_t h, int64_t w, std::vector<int64_t>& ys, std::vector<int64_t>& xs) const override {
    const double u = rng.uniform();
    const int64_t pad = o_.pad;
    const auto dy = static_cast<int64_t>(rng.below(static_cast<uint64_t>(h + 2 * pad - g_.height + 1)));
    const auto dx = static_cast<int64_t>(rng.below(static_cast<uint64_t>(w + 2 * pad - g_.width + 1)));
    const bool on = u < o_.p;
    for (size_t y = 0; y < ys.size(); ++y)
      ys[y] = on ? border(static_cast<int64_t>(y) + dy - pad, h) : static_cast<int64_t>(y);
    for (size_t x = 0; x < xs.size(); ++x)
      xs[x] = on ? border(static_cast<int64_t>(x) + dx - pad, w) : static_cast<int64_t>(x);
  }

 private:
  // Where a padded coordinate reads from, as cv::copyMakeBorder pads (-1: the constant fill).
  int64_t border(int64_t i, int64_t n) const {
    if (i >= 0 && i < n) return i;
    if (o_.mode == "constant") return -1;
    if (o_.mode == "edge" || n == 1) return std::clamp<int64_t>(i, 0, n - 1);
    while (i < 0 || i >= n) i = i < 0 ? -i : 2 * n - 2 - i;  // BORDER_REFLECT_101
    return i;
  }

  PadCropOptions o_;
  ImageGeometry g_;
};

config::Fields<PadCropOptions> pad_crop_fields() {
  config::Fields<PadCropOptions> f;
  f.field("pad", &PadCropOptions::pad, "padding in pixels on each side before the random crop").min(0);
  f.field("mode", &PadCropOptions::mode, "padding mode").choices({"reflect", "constant", "edge"});
  f.field("p", &PadCropOptions::p, "probability of applying").range(0, 1);
  return f;
}
KG_REGISTER(transform_registry(), "pad_crop", "pad each side, then crop a random window of data.image_size",
            "[[data.augment]]\nname = \"pad_crop\"\npad = 2", pad_crop_fields(),
            [](const PadCropOptions& o, const ImageGeometry& g) -> TransformPtr {
              return std::make_unique<PadCrop>(o, g);
            });

}  // namespace
}  // namespace kg::data
