// color_jitter: random brightness, contrast, saturation and hue, applied in a random order
// (torchvision ColorJitter). Always draws 1 + 3 + 4 numbers. Works in the image's pixel units:
// 8-bit images are clamped to [0, 255] after each step; float images are not clamped.
#include <algorithm>
#include <array>
#include <cmath>

#include <opencv2/core.hpp>

#include "core/error.h"
#include "data/transform.h"

namespace kg::data {
namespace {

// Keys of transform color_jitter; each field's doc is in color_jitter_fields() below and docs/reference.md.
struct ColorJitterOptions {
  double brightness = 0.4;
  double contrast = 0.4;
  double saturation = 0.4;
  double hue = 0.0;
  double p = 1.0;
};

float luma(const float* px) { return 0.299f * px[0] + 0.587f * px[1] + 0.114f * px[2]; }

// HSV hue rotation by `shift` turns: each pixel keeps its max and min, the middle channel moves.
// Written without cvtColor so it is also defined for float images outside [0, 1].
void rotate_hue(float* px, double shift) {
  float r = px[0], g = px[1], b = px[2];
  float mx = std::max({r, g, b}), mn = std::min({r, g, b}), d = mx - mn;
  if (!(d > 0)) return;
  double h = mx == r ? (g - b) / d : mx == g ? (b - r) / d + 2.0 : (r - g) / d + 4.0;
  h = std::fmod(h + 6.0 * shift, 6.0);
  if (h < 0) h += 6.0;
  int sector = std::min(static_cast<int>(h), 5);
  float f = static_cast<float>(h - sector), q = mx - d * f, t = mn + d * f;
  const float rgb[6][3] = {{mx, t, mn}, {q, mx, mn}, {mn, mx, t}, {mn, q, mx}, {t, mn, mx}, {mx, mn, q}};
  std::copy(rgb[sector], rgb[sector] + 3, px);
}

class ColorJitter : public Transform {
 public:
  explicit ColorJitter(const ColorJitterOptions& o) : o_(o) {}
  bool random() const override { return true; }
  void apply(cv::Mat& img, Rng& rng) const override {
    double u = rng.uniform();
    std::array<int, 4> order{0, 1, 2, 3};
    for (int i = 3; i > 0; --i)
      std::swap(order[static_cast<size_t>(i)], order[rng.below(static_cast<uint64_t>(i + 1))]);
    auto factor = [&](double x) { return rng.uniform(std::max(0.0, 1.0 - x), 1.0 + x); };
    const double fb = factor(o_.brightness), fc = factor(o_.contrast), fs = factor(o_.saturation);
    const double fh = rng.uniform(-o_.hue, o_.hue);
    if (u >= o_.p) return;

    const bool u8 = img.depth() == CV_8U;
    const int c = img.channels();
    cv::Mat f;
    img.convertTo(f, CV_32F);
    // Pixels are stored contiguously after convertTo.
    float* px = f.ptr<float>(0);
    const size_t n = f.total();
    auto clamp = [&] {
      if (u8)
        for (size_t i = 0; i < n * static_cast<size_t>(c); ++i) px[i] = std::clamp(px[i], 0.0f, 255.0f);
    };
    auto blend = [&](double k, auto other) {  // k * x + (1 - k) * other(pixel)
      for (size_t i = 0; i < n; ++i) {
        float* p = px + i * static_cast<size_t>(c);
        float o = other(p);
        for (int ch = 0; ch < c; ++ch) p[ch] = static_cast<float>(k * p[ch] + (1.0 - k) * o);
      }
      clamp();
    };
    for (int op : order) {
      if (op == 0 && o_.brightness > 0) {
        blend(fb, [](const float*) { return 0.0f; });
      } else if (op == 1 && o_.contrast > 0) {
        double mean = 0;
        for (size_t i = 0; i < n; ++i) mean += c == 3 ? luma(px + 3 * i) : px[i];
        mean /= static_cast<double>(n);
        blend(fc, [&](const float*) { return static_cast<float>(mean); });
      } else if (op == 2 && o_.saturation > 0 && c == 3) {
        blend(fs, [](const float* p) { return luma(p); });
      } else if (op == 3 && o_.hue > 0 && c == 3) {
        for (size_t i = 0; i < n; ++i) rotate_hue(px + 3 * i, fh);
        clamp();
      }
    }
    cv::Mat out;                   // a new buffer: the caller's image may be shared (TTA views)
    f.convertTo(out, img.type());  // rounds and saturates for 8-bit
    img = out;
  }

 private:
  ColorJitterOptions o_;
};

config::Fields<ColorJitterOptions> color_jitter_fields() {
  config::Fields<ColorJitterOptions> f;
  f.field("brightness", &ColorJitterOptions::brightness,
          "brightness factor drawn from [max(0, 1 - b), 1 + b]; 0 = unchanged")
      .min(0);
  f.field("contrast", &ColorJitterOptions::contrast,
          "contrast factor drawn from [max(0, 1 - c), 1 + c], blending with the mean luma; 0 = unchanged")
      .min(0);
  f.field("saturation", &ColorJitterOptions::saturation,
          "saturation factor drawn from [max(0, 1 - s), 1 + s], blending with the luma (RGB only); 0 = unchanged")
      .min(0);
  f.field("hue", &ColorJitterOptions::hue,
          "hue shift drawn from [-h, h] turns of the HSV colour wheel (RGB only); 0 = unchanged")
      .range(0, 0.5);
  f.field("p", &ColorJitterOptions::p, "probability of applying").range(0, 1);
  return f;
}
KG_TRANSFORMS_NEED_OPENCV("color_jitter");

KG_REGISTER(transform_registry(), "color_jitter",
            "random brightness, contrast, saturation and hue in a random order (torchvision ColorJitter)",
            "[[data.augment]]\nname = \"color_jitter\"\nbrightness = 0.4\ncontrast = 0.4\nsaturation = 0.4\nhue = 0.1",
            color_jitter_fields(), [](const ColorJitterOptions& o, const ImageGeometry&) -> TransformPtr {
              return std::make_unique<ColorJitter>(o);
            });

}  // namespace
}  // namespace kg::data
