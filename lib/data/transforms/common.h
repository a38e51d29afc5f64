// Small pieces shared by the transforms in this folder: interpolation names, fill values, crop and
// resize geometry, [lo, hi] key checks. Internal to lib/data/transforms/.
#pragma once
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include <opencv2/core.hpp>
#include <opencv2/imgproc.hpp>

#include "config/tree.h"
#include "core/random.h"

namespace kg::data::transforms {

// Interpolation keys of the resizing transforms; "auto" is area when shrinking, linear when growing
// (what the pipeline's own resize does, and close to PIL's antialiased bilinear).
inline std::vector<std::string> resize_interpolations() { return {"auto", "linear", "area", "nearest", "cubic"}; }
// Warps cannot use area.
inline std::vector<std::string> warp_interpolations() { return {"linear", "nearest", "cubic"}; }

inline int cv_interpolation(const std::string& name, cv::Size from, cv::Size to) {
  if (name == "linear") return cv::INTER_LINEAR;
  if (name == "area") return cv::INTER_AREA;
  if (name == "nearest") return cv::INTER_NEAREST;
  if (name == "cubic") return cv::INTER_CUBIC;
  bool shrink = from.height > to.height || from.width > to.width;
  return shrink ? cv::INTER_AREA : cv::INTER_LINEAR;
}

inline void resize_image(cv::Mat& img, int h, int w, const std::string& interpolation) {
  if (img.rows == h && img.cols == w) return;
  cv::Mat out;
  cv::resize(img, out, cv::Size(w, h), 0, 0, cv_interpolation(interpolation, img.size(), cv::Size(w, h)));
  img = out;
}

// `fill` in the image's pixel units: 0..255 (saturated) on 8-bit images, as given on float ones.
inline cv::Scalar fill_scalar(const cv::Mat& img, double fill) {
  return cv::Scalar::all(img.depth() == CV_8U ? std::clamp(std::round(fill), 0.0, 255.0) : fill);
}

// Python's round(): halves to even, as torchvision's crop arithmetic uses.
inline int round_even(double v) { return static_cast<int>(std::nearbyint(v)); }

// The central h x w window; pads with `fill` first where the image is smaller (torchvision CenterCrop).
inline void center_crop(cv::Mat& img, int h, int w, double fill) {
  if (img.rows < h || img.cols < w) {
    int dh = std::max(0, h - img.rows), dw = std::max(0, w - img.cols);
    cv::Mat padded;
    cv::copyMakeBorder(img, padded, dh / 2, (dh + 1) / 2, dw / 2, (dw + 1) / 2, cv::BORDER_CONSTANT,
                       fill_scalar(img, fill));
    img = padded;
  }
  int top = round_even((img.rows - h) / 2.0), left = round_even((img.cols - w) / 2.0);
  img = img(cv::Rect(left, top, w, h)).clone();
}

// The size that keeps the aspect ratio and covers h x w, the binding side exactly h or w
// (torchvision Resize(int) on the shorter side: the other side truncated).
inline cv::Size cover_size(cv::Size from, int h, int w) {
  const int64_t H = from.height, W = from.width;
  if (static_cast<int64_t>(h) * W >= static_cast<int64_t>(w) * H)
    return {std::max<int>(w, static_cast<int>(W * h / H)), h};
  return {w, std::max<int>(h, static_cast<int>(H * w / W))};
}

// The size that keeps the aspect ratio and fits inside h x w (letterbox).
inline cv::Size fit_size(cv::Size from, int h, int w) {
  const double H = from.height, W = from.width;
  if (h * W <= w * H) return {std::clamp(round_even(W * h / H), 1, w), h};
  return {w, std::clamp(round_even(H * w / W), 1, h)};
}

// A standard normal draw (Box-Muller), for random_erasing's pixel values.
inline double normal(Rng& rng) {
  double u1 = 1.0 - rng.uniform(), u2 = rng.uniform();  // u1 in (0, 1]
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
}

// Fields check for [lo, hi] pairs (types, length and element ranges are checked before it).
inline std::string check_lo_hi(const config::json& v) {
  if (v.size() == 2 && v[0].get<double>() > v[1].get<double>())
    return "expected [lo, hi] with lo <= hi, got " + v.dump();
  return "";
}

// A number x >= 0 (meaning [-x, x]) or a [lo, hi] pair: rotation and shear angles in degrees.
inline std::string check_symmetric_range(const config::json& v, bool allow_four = false) {
  std::string expected = allow_four ? "expected a number >= 0, [lo, hi] or [x_lo, x_hi, y_lo, y_hi] in degrees, got "
                                    : "expected a number >= 0 or [lo, hi] in degrees, got ";
  if (v.is_number()) return v.get<double>() >= 0 ? "" : expected + v.dump();
  if (!v.is_array() || !(v.size() == 2 || (allow_four && v.size() == 4))) return expected + v.dump();
  for (auto& x : v)
    if (!x.is_number()) return expected + v.dump();
  for (size_t i = 0; i < v.size(); i += 2)
    if (v[i].get<double>() > v[i + 1].get<double>()) return expected + v.dump() + " (lo > hi)";
  return "";
}

// [lo, hi] from a value that passed check_symmetric_range; `first` picks the pair (0 or 2).
inline std::pair<double, double> symmetric_range(const config::json& v, size_t first = 0) {
  if (v.is_number()) return first == 0 ? std::pair{-v.get<double>(), v.get<double>()} : std::pair{0.0, 0.0};
  if (v.size() <= first) return {0.0, 0.0};
  return {v[first].get<double>(), v[first + 1].get<double>()};
}

}  // namespace kg::data::transforms
