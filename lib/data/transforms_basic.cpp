// The transforms of the skeleton: pad_crop (the CIFAR/DAWNBench crop), hflip and normalize.
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

struct FlipOptions {
  double p = 0.5;  ///< probability of flipping
};

class HFlip : public Transform {
 public:
  explicit HFlip(const FlipOptions& o) : p_(o.p) {}
  bool random() const override { return true; }
  void apply(cv::Mat& img, Rng& rng) const override {
    if (rng.uniform() < p_) cv::flip(img, img, 1);
  }

 private:
  double p_;
};

struct NormalizeOptions {
  std::vector<double> mean{0.485, 0.456, 0.406};  ///< per-channel mean in [0, 1] pixel units (one value: all channels)
  std::vector<double> std{0.229, 0.224, 0.225};   ///< per-channel std in [0, 1] pixel units (one value: all channels)
};

class Normalize : public Transform {
 public:
  Normalize(const NormalizeOptions& o, const ImageGeometry& g) {
    auto pick = [&](const std::vector<double>& v, const char* key) {
      KG_CHECK(v.size() == 1 || static_cast<int64_t>(v.size()) == g.channels, ConfigError, "normalize.", key, " has ",
               v.size(), " values but data.channels = ", g.channels, " (give one value or one per channel)");
      std::vector<double> out(static_cast<size_t>(g.channels));
      for (size_t c = 0; c < out.size(); ++c) out[c] = v.size() == 1 ? v[0] : v[c];
      return out;
    };
    mean_ = pick(o.mean, "mean");
    std_ = pick(o.std, "std");
    for (double s : std_) KG_CHECK(s > 0, ConfigError, "normalize.std values must be > 0");
  }
  bool random() const override { return false; }
  void apply(cv::Mat& img, Rng&) const override {
    cv::Mat f;
    const double scale = img.depth() == CV_8U ? 1.0 / 255.0 : 1.0;
    img.convertTo(f, CV_32F, scale);
    const int c = f.channels();
    for (int y = 0; y < f.rows; ++y) {
      float* row = f.ptr<float>(y);
      for (int x = 0; x < f.cols; ++x)
        for (int k = 0; k < c; ++k) row[x * c + k] = static_cast<float>((row[x * c + k] - mean_[k]) / std_[k]);
    }
    img = f;
  }

 private:
  std::vector<double> mean_, std_;
};

config::Fields<PadCropOptions> pad_crop_fields() {
  config::Fields<PadCropOptions> f;
  f.field("pad", &PadCropOptions::pad, "padding in pixels on each side").min(0);
  f.field("mode", &PadCropOptions::mode, "padding mode").choices({"reflect", "constant", "edge"});
  f.field("p", &PadCropOptions::p, "probability of applying").range(0, 1);
  return f;
}
config::Fields<FlipOptions> flip_fields() {
  config::Fields<FlipOptions> f;
  f.field("p", &FlipOptions::p, "probability of flipping").range(0, 1);
  return f;
}
config::Fields<NormalizeOptions> normalize_fields() {
  config::Fields<NormalizeOptions> f;
  f.field("mean", &NormalizeOptions::mean, "mean in [0, 1] pixel units, one value or one per channel");
  f.field("std", &NormalizeOptions::std, "std in [0, 1] pixel units, one value or one per channel")
      .min(0, true);
  return f;
}

KG_REGISTER(transform_registry(), "pad_crop", "pad each side, then crop a random window of data.image_size",
            "[[data.augment]]\nname = \"pad_crop\"\npad = 2", pad_crop_fields(),
            [](const PadCropOptions& o, const ImageGeometry& g) -> TransformPtr { return std::make_unique<PadCrop>(o, g); });
KG_REGISTER(transform_registry(), "hflip", "mirror left-right with probability p",
            "[[data.augment]]\nname = \"hflip\"", flip_fields(),
            [](const FlipOptions& o, const ImageGeometry&) -> TransformPtr { return std::make_unique<HFlip>(o); });
KG_REGISTER(transform_registry(), "normalize", "(x - mean) / std in [0, 1] pixel units (ImageNet defaults)",
            "[[data.augment]]\nname = \"normalize\"\nmean = [0.286]\nstd = [0.353]", normalize_fields(),
            [](const NormalizeOptions& o, const ImageGeometry& g) -> TransformPtr { return std::make_unique<Normalize>(o, g); });

}  // namespace
}  // namespace kg::data
