// affine / rotate: random rotation, translation, scale and shear about the image centre, same size,
// uncovered pixels set to `fill` (torchvision RandomAffine / RandomRotation, including its inverse
// matrix `_get_inverse_affine_matrix`). Always draws 7 numbers.
#include <cmath>

#include <opencv2/core.hpp>
#include <opencv2/imgproc.hpp>

#include "core/error.h"
#include "data/transform.h"
#include "data/transforms/common.h"

namespace kg::data {
namespace {

// Keys of transform affine; each field's doc is in affine_fields() below and docs/reference.md.
struct AffineOptions {
  config::json degrees = 0.0;
  std::vector<double> translate{0.0, 0.0};
  std::vector<double> scale{1.0, 1.0};
  config::json shear = 0.0;
  double fill = 0;
  std::string interpolation = "linear";
  double p = 1.0;
};

// Keys of transform rotate; each field's doc is in rotate_fields() below and docs/reference.md.
struct RotateOptions {
  config::json degrees = 10.0;
  double fill = 0;
  std::string interpolation = "linear";
  double p = 1.0;
};

class Affine : public Transform {
 public:
  // `sign` -1 turns torchvision's clockwise affine angle into RandomRotation's counter-clockwise one.
  Affine(const AffineOptions& o, double sign) : o_(o), sign_(sign) {}
  bool random() const override { return true; }
  void apply(cv::Mat& img, Rng& rng) const override {
    const double W = img.cols, H = img.rows;
    double u = rng.uniform();
    auto [alo, ahi] = transforms::symmetric_range(o_.degrees);
    double angle = sign_ * rng.uniform(alo, ahi);
    double max_dx = o_.translate[0] * W, max_dy = o_.translate[1] * H;
    double tx = transforms::round_even(rng.uniform(-max_dx, max_dx));
    double ty = transforms::round_even(rng.uniform(-max_dy, max_dy));
    double scale = rng.uniform(o_.scale[0], o_.scale[1]);
    auto [sxlo, sxhi] = transforms::symmetric_range(o_.shear, 0);
    auto [sylo, syhi] = transforms::symmetric_range(o_.shear, 2);
    double shear_x = rng.uniform(sxlo, sxhi), shear_y = rng.uniform(sylo, syhi);
    if (u >= o_.p) return;

    // Output -> input map. The tensor path centres pixel (W - 1) / 2, which in OpenCV's
    // integer pixel coordinates is the point below.
    const double cx = (W - 1) * 0.5, cy = (H - 1) * 0.5;
    const double deg = CV_PI / 180.0, rot = angle * deg, sx = shear_x * deg, sy = shear_y * deg;
    const double a = std::cos(rot - sy) / std::cos(sy);
    const double b = -std::cos(rot - sy) * std::tan(sx) / std::cos(sy) - std::sin(rot);
    const double c = std::sin(rot - sy) / std::cos(sy);
    const double d = -std::sin(rot - sy) * std::tan(sx) / std::cos(sy) + std::cos(rot);
    double m[6] = {d / scale, -b / scale, 0.0, -c / scale, a / scale, 0.0};
    m[2] = m[0] * (-cx - tx) + m[1] * (-cy - ty) + cx;
    m[5] = m[3] * (-cx - tx) + m[4] * (-cy - ty) + cy;
    cv::Mat M(2, 3, CV_64F, m);
    int interp = transforms::cv_interpolation(o_.interpolation, img.size(), img.size());
    cv::Mat out;
    cv::warpAffine(img, out, M, img.size(), interp | cv::WARP_INVERSE_MAP, cv::BORDER_CONSTANT,
                   transforms::fill_scalar(img, o_.fill));
    img = out;
  }

 private:
  AffineOptions o_;
  double sign_;
};

std::string check_degrees(const config::json& v) { return transforms::check_symmetric_range(v); }
std::string check_shear(const config::json& v) { return transforms::check_symmetric_range(v, true); }

config::Fields<AffineOptions> affine_fields() {
  config::Fields<AffineOptions> f;
  f.field("degrees", &AffineOptions::degrees, "rotation in degrees, positive clockwise: x means [-x, x], or [lo, hi]")
      .check(check_degrees);
  f.field("translate", &AffineOptions::translate, "[fx, fy] maximum shift as a fraction of width and height")
      .size(2)
      .range(0, 1);
  f.field("scale", &AffineOptions::scale, "[lo, hi] zoom factor, drawn uniformly")
      .size(2)
      .positive()
      .check(transforms::check_lo_hi);
  f.field("shear", &AffineOptions::shear,
          "shear in degrees: x means x-shear in [-x, x], [lo, hi], or [x_lo, x_hi, y_lo, y_hi]")
      .check(check_shear);
  f.field("fill", &AffineOptions::fill, "value of uncovered pixels (0..255 on 8-bit images, as given on float ones)");
  f.field("interpolation", &AffineOptions::interpolation, "pixel interpolation")
      .choices(transforms::warp_interpolations());
  f.field("p", &AffineOptions::p, "probability of applying").range(0, 1);
  return f;
}
KG_TRANSFORMS_NEED_OPENCV("affine", "rotate");

KG_REGISTER(transform_registry(), "affine",
            "random rotation, translation, scale and shear about the centre (torchvision RandomAffine)",
            "[[data.augment]]\nname = \"affine\"\ndegrees = 10\ntranslate = [0.1, 0.1]\nscale = [0.9, 1.1]\nshear = 5",
            affine_fields(), [](const AffineOptions& o, const ImageGeometry&) -> TransformPtr {
              return std::make_unique<Affine>(o, 1.0);
            });

config::Fields<RotateOptions> rotate_fields() {
  config::Fields<RotateOptions> f;
  f.field("degrees", &RotateOptions::degrees,
          "rotation in degrees, positive counter-clockwise: x means [-x, x], or [lo, hi]")
      .check(check_degrees);
  f.field("fill", &RotateOptions::fill, "value of uncovered pixels (0..255 on 8-bit images, as given on float ones)");
  f.field("interpolation", &RotateOptions::interpolation, "pixel interpolation")
      .choices(transforms::warp_interpolations());
  f.field("p", &RotateOptions::p, "probability of applying").range(0, 1);
  return f;
}
KG_REGISTER(transform_registry(), "rotate",
            "random rotation about the centre (torchvision RandomRotation; affine with degrees only)",
            "[[data.augment]]\nname = \"rotate\"\ndegrees = 15", rotate_fields(),
            [](const RotateOptions& o, const ImageGeometry&) -> TransformPtr {
              AffineOptions a;
              a.degrees = o.degrees;
              a.fill = o.fill;
              a.interpolation = o.interpolation;
              a.p = o.p;
              return std::make_unique<Affine>(a, -1.0);
            });

}  // namespace
}  // namespace kg::data
