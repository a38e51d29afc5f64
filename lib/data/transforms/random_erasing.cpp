// random_erasing: with probability p, overwrite 1..count random boxes (timm RandomErasing, Zhong et
// al. 2017, "Random Erasing Data Augmentation"). Normally placed after normalize. Always draws
// 3 + count * 10 * 4 numbers from the stream; pixel values come from a side Rng seeded by one of them.
#include <cmath>

#include <opencv2/core.hpp>

#include "core/error.h"
#include "data/transform.h"
#include "data/transforms/common.h"

namespace kg::data {
namespace {

// Keys of transform random_erasing; each field's doc is in random_erasing_fields() below and docs/reference.md.
struct RandomErasingOptions {
  double p = 0.25;
  std::vector<double> scale{0.02, 1.0 / 3.0};
  std::vector<double> ratio{0.3, 3.3};
  std::string mode = "const";
  int64_t count = 1;
  double value = 0;
};

class RandomErasing : public Transform {
 public:
  explicit RandomErasing(const RandomErasingOptions& o) : o_(o) {}
  bool random() const override { return true; }
  void apply(cv::Mat& img, Rng& rng) const override {
    const int max_count = static_cast<int>(o_.count);
    double u = rng.uniform();
    int count = 1 + static_cast<int>(rng.below(static_cast<uint64_t>(max_count)));
    Rng pixels(rng.next());
    std::vector<cv::Rect> boxes;
    const int H = img.rows, W = img.cols;
    const double area = static_cast<double>(H) * W;
    const double log_lo = std::log(o_.ratio[0]), log_hi = std::log(o_.ratio[1]);
    for (int box = 0; box < max_count; ++box) {
      bool placed = false;
      for (int attempt = 0; attempt < 10; ++attempt) {
        double target_area = rng.uniform(o_.scale[0], o_.scale[1]) * area / count;
        double aspect = std::exp(rng.uniform(log_lo, log_hi));
        double ut = rng.uniform(), ul = rng.uniform();
        if (placed || box >= count) continue;  // keep drawing: the count of draws is fixed
        int h = transforms::round_even(std::sqrt(target_area * aspect));
        int w = transforms::round_even(std::sqrt(target_area / aspect));
        if (w < W && h < H) {  // timm's test; an empty box erases nothing
          int top = static_cast<int>(ut * (H - h + 1)), left = static_cast<int>(ul * (W - w + 1));
          boxes.emplace_back(left, top, w, h);
          placed = true;
        }
      }
    }
    if (u >= o_.p || boxes.empty()) return;

    cv::Mat out = img.clone();  // a new buffer: the caller's image may be shared
    const bool u8 = out.depth() == CV_8U;
    const int c = out.channels();
    // timm draws normal values (for normalized images); 8-bit images get uniform 0..255.
    auto draw = [&]() -> double { return u8 ? static_cast<double>(pixels.below(256)) : transforms::normal(pixels); };
    for (const cv::Rect& r : boxes) {
      cv::Mat roi = out(r);
      if (o_.mode == "pixel") {
        for (int y = 0; y < roi.rows; ++y)
          for (int x = 0; x < roi.cols; ++x)
            for (int k = 0; k < c; ++k) {
              if (u8)
                roi.ptr<uint8_t>(y)[x * c + k] = static_cast<uint8_t>(draw());
              else
                roi.ptr<float>(y)[x * c + k] = static_cast<float>(draw());
            }
      } else {
        cv::Scalar v = transforms::fill_scalar(out, o_.value);
        if (o_.mode == "rand")
          for (int k = 0; k < c; ++k) v[k] = draw();
        roi.setTo(v);
      }
    }
    img = out;
  }

 private:
  RandomErasingOptions o_;
};

config::Fields<RandomErasingOptions> random_erasing_fields() {
  config::Fields<RandomErasingOptions> f;
  f.field("p", &RandomErasingOptions::p, "probability of erasing (timm's reprob)").range(0, 1);
  f.field("scale", &RandomErasingOptions::scale,
          "[lo, hi] range of the erased fraction of the image area (split over the boxes)")
      .size(2)
      .min(0, true)
      .max(1)
      .check(transforms::check_lo_hi);
  f.field("ratio", &RandomErasingOptions::ratio, "[lo, hi] range of a box's aspect ratio (log-uniform)")
      .size(2)
      .positive()
      .check(transforms::check_lo_hi);
  f.field("mode", &RandomErasingOptions::mode,
          "const: value | rand: one random colour per box | pixel: random per pixel (normal on float images, uniform "
          "0..255 on 8-bit)")
      .choices({"const", "rand", "pixel"});
  f.field("count", &RandomErasingOptions::count, "maximum number of boxes (the number is drawn from 1..count)")
      .range(1, 100);
  f.field("value", &RandomErasingOptions::value, "const mode's value (0..255 on 8-bit images, as given on float ones)");
  return f;
}
KG_TRANSFORMS_NEED_OPENCV("random_erasing");

KG_REGISTER(transform_registry(), "random_erasing",
            "overwrite random boxes with a constant or random values (timm RandomErasing)",
            "[[data.augment]]\nname = \"random_erasing\"\np = 0.25\nmode = \"pixel\"", random_erasing_fields(),
            [](const RandomErasingOptions& o, const ImageGeometry&) -> TransformPtr {
              return std::make_unique<RandomErasing>(o);
            });

}  // namespace
}  // namespace kg::data
