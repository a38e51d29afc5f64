// gaussian_blur: blur with a Gaussian of random sigma with probability p (torchvision GaussianBlur,
// reflect borders).
#include <opencv2/core.hpp>
#include <opencv2/imgproc.hpp>

#include "core/error.h"
#include "data/transform.h"
#include "data/transforms/common.h"

namespace kg::data {
namespace {

// Keys of transform gaussian_blur; each field's doc is in gaussian_blur_fields() below and docs/reference.md.
struct GaussianBlurOptions {
  int64_t kernel_size = 3;
  std::vector<double> sigma{0.1, 2.0};
  double p = 0.5;
};

class GaussianBlur : public Transform {
 public:
  explicit GaussianBlur(const GaussianBlurOptions& o) : o_(o) {}
  bool random() const override { return true; }
  void apply(cv::Mat& img, Rng& rng) const override {
    double u = rng.uniform();
    double sigma = rng.uniform(o_.sigma[0], o_.sigma[1]);
    if (u >= o_.p) return;
    int k = static_cast<int>(o_.kernel_size);
    cv::Mat out;  // a new buffer: the caller's image may be shared
    cv::GaussianBlur(img, out, cv::Size(k, k), sigma, sigma, cv::BORDER_REFLECT_101);
    img = out;
  }

 private:
  GaussianBlurOptions o_;
};

config::Fields<GaussianBlurOptions> gaussian_blur_fields() {
  config::Fields<GaussianBlurOptions> f;
  f.field("kernel_size", &GaussianBlurOptions::kernel_size, "kernel width and height in pixels, odd")
      .min(1)
      .check([](const config::json& v) -> std::string {
        return v.get<int64_t>() % 2 == 1 ? "" : "expected an odd kernel size, got " + v.dump();
      });
  f.field("sigma", &GaussianBlurOptions::sigma, "[lo, hi] range of the Gaussian's sigma in pixels, drawn uniformly")
      .size(2)
      .positive()
      .check(transforms::check_lo_hi);
  f.field("p", &GaussianBlurOptions::p, "probability of blurring").range(0, 1);
  return f;
}
KG_TRANSFORMS_NEED_OPENCV("gaussian_blur");

KG_REGISTER(transform_registry(), "gaussian_blur",
            "Gaussian blur with sigma drawn uniformly from [lo, hi], with probability p",
            "[[data.augment]]\nname = \"gaussian_blur\"\nkernel_size = 5\nsigma = [0.1, 2.0]", gaussian_blur_fields(),
            [](const GaussianBlurOptions& o, const ImageGeometry&) -> TransformPtr {
              return std::make_unique<GaussianBlur>(o);
            });

}  // namespace
}  // namespace kg::data
