// normalize: (x - mean) / std in [0, 1] pixel units; turns the image into floats.
#if KG_WITH_OPENCV
#include <opencv2/core.hpp>
#endif

#include "core/error.h"
#include "data/transform.h"

namespace kg::data {
namespace {

// Keys of transform normalize; each field's doc is in normalize_fields() below and docs/reference.md.
struct NormalizeOptions {
  std::vector<double> mean{0.485, 0.456, 0.406};
  std::vector<double> std{0.229, 0.224, 0.225};
  std::string preset;
};

class Normalize : public Transform {
 public:
  Normalize(const NormalizeOptions& o, const ImageGeometry& g) {
    auto pick = [&](const std::vector<double>& v, const char* key) {
      KG_CHECK(v.size() == 1 || static_cast<int64_t>(v.size()) == g.channels, ConfigError, "normalize.", key, " has ",
               v.size(), " values but data.channels = ", g.channels, " (give one value or one per channel",
               g.channels == 1 && v.size() == 3
                   ? "; unset, mean and std are ImageNet's RGB values: give your images' own, "
                     "or preset = \"imagenet\" for its gray 0.449 / 0.226"
                   : "",
               ")");
      std::vector<double> out(static_cast<size_t>(g.channels));
      for (size_t c = 0; c < out.size(); ++c) out[c] = v.size() == 1 ? v[0] : v[c];
      return out;
    };
    if (o.preset == "imagenet") {
      // Gray images use the channel averages, as timm does for in_chans = 1.
      mean_ = g.channels == 1 ? std::vector<double>{0.449} : std::vector<double>{0.485, 0.456, 0.406};
      std_ = g.channels == 1 ? std::vector<double>{0.226} : std::vector<double>{0.229, 0.224, 0.225};
    } else {
      mean_ = pick(o.mean, "mean");
      std_ = pick(o.std, "std");
    }
    for (double s : std_) KG_CHECK(s > 0, ConfigError, "normalize.std values must be > 0");
  }
  bool random() const override { return false; }
  bool normalization(std::vector<double>& mean, std::vector<double>& std) const override {
    mean = mean_;
    std = std_;
    return true;
  }
  void apply(Image& img, Rng&) const override {
#if KG_WITH_OPENCV
    cv::Mat f;
    const double scale = img.depth() == CV_8U ? 1.0 / 255.0 : 1.0;
    img.convertTo(f, CV_32F, scale);
#else
    // convertTo's arithmetic: float samples times the float scale.
    Image f(img.rows, img.cols, image_type(kDepth32F, img.channels()));
    const bool u8 = img.depth() == kDepth8U;
    const float scale = static_cast<float>(1.0 / 255.0);
    for (int y = 0; y < f.rows; ++y) {
      float* out = f.ptr<float>(y);
      for (int x = 0; x < f.cols * f.channels(); ++x)
        out[x] = u8 ? static_cast<float>(img.ptr<uint8_t>(y)[x]) * scale : img.ptr<float>(y)[x];
    }
#endif
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

config::Fields<NormalizeOptions> normalize_fields() {
  config::Fields<NormalizeOptions> f;
  f.field("mean", &NormalizeOptions::mean, "mean in [0, 1] pixel units, one value or one per channel");
  f.field("std", &NormalizeOptions::std, "std in [0, 1] pixel units, one value or one per channel").min(0, true);
  f.field("preset", &NormalizeOptions::preset,
          "\"\" = use mean and std; imagenet = ImageNet statistics (overrides mean and std; 1 channel: 0.449 / 0.226)")
      .choices({"", "imagenet"});
  return f;
}

KG_REGISTER(transform_registry(), "normalize", "(x - mean) / std in [0, 1] pixel units (ImageNet defaults)",
            "[[data.augment]]\nname = \"normalize\"\nmean = [0.286]\nstd = [0.353]", normalize_fields(),
            [](const NormalizeOptions& o, const ImageGeometry& g) -> TransformPtr {
              return std::make_unique<Normalize>(o, g);
            });

}  // namespace
}  // namespace kg::data
