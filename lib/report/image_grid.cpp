#include "report/image_grid.h"

#include <algorithm>

#if KG_WITH_OPENCV
#include <opencv2/core.hpp>
#include <opencv2/imgproc.hpp>
#endif

#include "core/error.h"
#include "data/image_io.h"

namespace kg::report {

#if !KG_WITH_OPENCV
std::string grid_png(const std::vector<Tile>&, const GridOptions&, int*, int*) {
  throw DataError(
      "image grids are drawn with OpenCV, which this kgtrain was built without (Debian/Ubuntu: apt-get install "
      "libopencv-dev, then rebuild)");
}
#else
namespace {

constexpr int kGridFont = cv::FONT_HERSHEY_SIMPLEX;
constexpr double kGridScale = 0.42;
constexpr int kGridLine = 15, kGridPad = 6;

cv::Mat tile_rgb(const Tile& t, int scale) {
  KG_CHECK(t.height > 0 && t.width > 0 && (t.channels == 1 || t.channels == 3) &&
               t.pixels.size() == static_cast<size_t>(t.height) * t.width * t.channels,
           DataError,
           "image grid: a tile of " + std::to_string(t.height) + "x" + std::to_string(t.width) + "x" +
               std::to_string(t.channels) + " has " + std::to_string(t.pixels.size()) + " bytes");
  cv::Mat m(t.height, t.width, t.channels == 1 ? CV_8UC1 : CV_8UC3, const_cast<uint8_t*>(t.pixels.data()));
  cv::Mat rgb;
  if (t.channels == 1)
    cv::cvtColor(m, rgb, cv::COLOR_GRAY2RGB);
  else
    rgb = m.clone();
  if (scale > 1) cv::resize(rgb, rgb, cv::Size(), scale, scale, cv::INTER_NEAREST);
  return rgb;
}

}  // namespace

std::string grid_png(const std::vector<Tile>& tiles, const GridOptions& o, int* height, int* width) {
  int th = 1, tw = 1, lines = 0;
  for (auto& t : tiles) {
    th = std::max(th, t.height);
    tw = std::max(tw, t.width);
    lines = std::max(lines, static_cast<int>(t.caption.size()));
  }
  const int scale = std::max(1, (o.min_tile + std::max(th, tw) - 1) / std::max(th, tw));
  int cell_w = tw * scale, cell_h = th * scale;
  // Captions must fit under the tile: widen the cell for the longest line.
  for (auto& t : tiles)
    for (auto& l : t.caption) {
      int base = 0;
      cell_w = std::max(cell_w, cv::getTextSize(l, kGridFont, kGridScale, 1, &base).width);
    }
  const int cols = std::max(1, std::min<int>(o.columns, static_cast<int>(std::max<size_t>(1, tiles.size()))));
  const int rows = static_cast<int>((tiles.size() + cols - 1) / cols);
  const int title_h = o.title.empty() ? 0 : kGridLine + kGridPad;
  const int step_x = cell_w + kGridPad, step_y = cell_h + lines * kGridLine + 2 * kGridPad;
  cv::Mat img(std::max(1, title_h + rows * step_y + kGridPad), cols * step_x + kGridPad, CV_8UC3, cv::Scalar(255, 255, 255));
  if (!o.title.empty())
    cv::putText(img, o.title, cv::Point(kGridPad, kGridLine), kGridFont, kGridScale * 1.15, cv::Scalar(0, 0, 0), 1, cv::LINE_AA);
  for (size_t i = 0; i < tiles.size(); ++i) {
    const auto& t = tiles[i];
    const int x = kGridPad + static_cast<int>(i % cols) * step_x, y = title_h + kGridPad + static_cast<int>(i / cols) * step_y;
    cv::Mat rgb = tile_rgb(t, scale);
    rgb.copyTo(img(cv::Rect(x + (cell_w - rgb.cols) / 2, y, rgb.cols, rgb.rows)));
    const cv::Scalar color(t.caption_color.r, t.caption_color.g, t.caption_color.b);
    for (size_t l = 0; l < t.caption.size(); ++l)
      cv::putText(img, t.caption[l], cv::Point(x, y + cell_h + kGridLine * static_cast<int>(l + 1)), kGridFont, kGridScale, color,
                  1, cv::LINE_AA);
  }
  if (height) *height = img.rows;
  if (width) *width = img.cols;
  std::string bytes;
  data::encode_png(img, bytes);  // the canvas is RGB already (colours were given as RGB)
  return bytes;
}
#endif

}  // namespace kg::report
