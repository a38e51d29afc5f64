// grayscale: replace RGB by its ITU-R 601 luma with probability p, keeping three channels
// (torchvision RandomGrayscale). A no-op on 1-channel images.
#include <opencv2/core.hpp>
#include <opencv2/imgproc.hpp>

#include "core/error.h"
#include "data/transform.h"

namespace kg::data {
namespace {

// Keys of transform grayscale; each field's doc is in grayscale_fields() below and docs/reference.md.
struct GrayscaleOptions {
  double p = 0.1;
};

class Grayscale : public Transform {
 public:
  explicit Grayscale(const GrayscaleOptions& o) : p_(o.p) {}
  bool random() const override { return true; }
  void apply(cv::Mat& img, Rng& rng) const override {
    if (rng.uniform() >= p_ || img.channels() != 3) return;
    cv::Mat gray;
    cv::cvtColor(img, gray, cv::COLOR_RGB2GRAY);  // 0.299 R + 0.587 G + 0.114 B
    cv::Mat out;                                  // a new buffer: the caller's image may be shared
    cv::cvtColor(gray, out, cv::COLOR_GRAY2RGB);
    img = out;
  }

 private:
  double p_;
};

config::Fields<GrayscaleOptions> grayscale_fields() {
  config::Fields<GrayscaleOptions> f;
  f.field("p", &GrayscaleOptions::p, "probability of converting (default: torchvision RandomGrayscale's)").range(0, 1);
  return f;
}
KG_TRANSFORMS_NEED_OPENCV("grayscale");

KG_REGISTER(transform_registry(), "grayscale",
            "replace RGB by its luma (0.299 R + 0.587 G + 0.114 B) with probability p, keeping 3 channels",
            "[[data.augment]]\nname = \"grayscale\"\np = 0.2", grayscale_fields(),
            [](const GrayscaleOptions& o, const ImageGeometry&) -> TransformPtr {
              return std::make_unique<Grayscale>(o);
            });

}  // namespace
}  // namespace kg::data
