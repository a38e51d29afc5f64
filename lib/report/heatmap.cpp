#include "report/heatmap.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#if KG_WITH_OPENCV
#include <opencv2/core.hpp>
#include <opencv2/imgproc.hpp>
#endif

#include "core/error.h"
#include "data/image_io.h"

namespace kg::report {

Rgb jet(double v) {
  v = std::clamp(std::isfinite(v) ? v : 0.0, 0.0, 1.0);
  auto ch = [&](double center) {
    return static_cast<uint8_t>(std::lround(255 * std::clamp(1.5 - std::fabs(4 * v - center), 0.0, 1.0)));
  };
  return {ch(3), ch(2), ch(1)};
}

#if !KG_WITH_OPENCV
std::string heatmap_png(const std::vector<Matrix>&, const std::vector<std::string>&, const std::string&,
                        const std::string&) {
  throw DataError(
      "heatmaps are drawn with OpenCV, which this kgtrain was built without (Debian/Ubuntu: apt-get install "
      "libopencv-dev, then rebuild); interpret.json has the numbers");
}
#else
namespace {

constexpr int kHeatFont = cv::FONT_HERSHEY_SIMPLEX;
constexpr double kHeatText = 0.4;

std::string cut(const std::string& s) { return s.size() <= 14 ? s : s.substr(0, 13) + "~"; }

int text_width(const std::string& s, double scale) {
  int base = 0;
  return cv::getTextSize(s, kHeatFont, scale, 1, &base).width;
}

void put(cv::Mat& img, const std::string& s, cv::Point org, double scale, cv::Scalar color) {
  cv::putText(img, s, org, kHeatFont, scale, color, 1, cv::LINE_AA);
}

}  // namespace

std::string heatmap_png(const std::vector<Matrix>& matrices, const std::vector<std::string>& labels,
                        const std::string& xlabel, const std::string& ylabel) {
  const int n = static_cast<int>(labels.size());
  int label_w = 0;
  for (auto& l : labels) label_w = std::max(label_w, text_width(cut(l), kHeatText));
  const int cell = std::max(34, std::min(60, 640 / std::max(1, n)));
  const int left = label_w + 34, top = 40, bottom = label_w + 40, gap = 40;
  const int grid = cell * n;
  const int width =
      static_cast<int>(matrices.size()) * (left + grid) + (static_cast<int>(matrices.size()) - 1) * gap + 20;
  cv::Mat img(top + grid + bottom, std::max(width, 200), CV_8UC3, cv::Scalar(255, 255, 255));
  const cv::Scalar ink(40, 40, 40);
  for (size_t m = 0; m < matrices.size(); ++m) {
    const auto& mat = matrices[m];
    const int x0 = static_cast<int>(m) * (left + grid + gap) + left;
    double hi = 0;
    for (auto& r : mat.values)
      for (double v : r) hi = std::max(hi, v);
    put(img, mat.title, cv::Point(x0, 24), 0.55, ink);
    for (int i = 0; i < n && i < static_cast<int>(mat.values.size()); ++i)
      for (int j = 0; j < n && j < static_cast<int>(mat.values[static_cast<size_t>(i)].size()); ++j) {
        const double v = mat.values[static_cast<size_t>(i)][static_cast<size_t>(j)];
        const double f = hi > 0 ? v / hi : 0.0;
        // White to matplotlib's Blues dark end, RGB (8, 48, 107), given here in OpenCV's BGR order.
        const cv::Scalar fill(255 - f * (255 - 107), 255 - f * (255 - 48), 255 - f * (255 - 8));
        const cv::Rect r(x0 + j * cell, top + i * cell, cell, cell);
        cv::rectangle(img, r, cv::Scalar(fill[0], fill[1], fill[2]), cv::FILLED);
        cv::rectangle(img, r, cv::Scalar(225, 225, 225), 1);
        char b[32];
        if (mat.integers)
          std::snprintf(b, sizeof b, "%.0f", v);
        else
          std::snprintf(b, sizeof b, "%.2f", v);
        const double scale = cell >= 44 ? kHeatText : 0.33;
        put(img, b, cv::Point(r.x + (cell - text_width(b, scale)) / 2, r.y + cell / 2 + 4), scale,
            f > 0.5 ? cv::Scalar(255, 255, 255) : ink);
      }
    for (int i = 0; i < n; ++i) {
      const std::string l = cut(labels[static_cast<size_t>(i)]);
      put(img, l, cv::Point(x0 - 6 - text_width(l, kHeatText), top + i * cell + cell / 2 + 4), kHeatText, ink);
      // Column labels written vertically: drawn horizontally on a strip, rotated.
      cv::Mat strip(cell, label_w + 4, CV_8UC3, cv::Scalar(255, 255, 255));
      put(strip, l, cv::Point(label_w + 2 - text_width(l, kHeatText), cell / 2 + 4), kHeatText, ink);
      cv::Mat rotated;
      cv::rotate(strip, rotated, cv::ROTATE_90_CLOCKWISE);
      rotated.copyTo(img(cv::Rect(x0 + i * cell, top + grid + 4, rotated.cols, rotated.rows)));
    }
    put(img, xlabel, cv::Point(x0 + grid / 2 - text_width(xlabel, 0.45) / 2, img.rows - 10), 0.45, ink);
    cv::Mat yl(20, text_width(ylabel, 0.45) + 4, CV_8UC3, cv::Scalar(255, 255, 255));
    put(yl, ylabel, cv::Point(2, 15), 0.45, ink);
    cv::Mat ylr;
    cv::rotate(yl, ylr, cv::ROTATE_90_COUNTERCLOCKWISE);
    const int yy = std::max(0, top + grid / 2 - ylr.rows / 2);
    if (yy + ylr.rows <= img.rows) ylr.copyTo(img(cv::Rect(x0 - left + 4, yy, ylr.cols, ylr.rows)));
  }
  cv::cvtColor(img, img, cv::COLOR_BGR2RGB);  // drawn in BGR; encode_png takes RGB
  std::string bytes;
  data::encode_png(img, bytes);
  return bytes;
}
#endif

}  // namespace kg::report
