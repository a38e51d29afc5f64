// The PNG line-plot library: files decode at the requested size, series land where their data says, gaps
// and log axes behave as documented, tick labels read well.
#include <catch2/catch.hpp>

#include <cmath>
#include <filesystem>

#include <opencv2/core.hpp>
#include <opencv2/imgproc.hpp>

#include "core/error.h"
#include "data/image_io.h"
#include "report/plot.h"
#include "support/temp_dir.h"

namespace {
namespace KG_UNITY_ID {  // each test file's own names in a unity batch (CMakeLists.txt)

using kg::report::Marker;
using kg::report::PlotOptions;
using kg::report::Series;

namespace {

// Pixels within `tol` of colour `c` in every channel.
cv::Mat mask_of(const cv::Mat& bgr, kg::report::Rgb c, int tol = 24) {
  cv::Mat m;
  cv::inRange(bgr, cv::Scalar(std::max(c.b - tol, 0), std::max(c.g - tol, 0), std::max(c.r - tol, 0)),
              cv::Scalar(std::min(c.b + tol, 255), std::min(c.g + tol, 255), std::min(c.r + tol, 255)), m);
  return m;
}

// Mean row of the mask's pixels in columns [x0, x1); -1 when there are none.
double mean_row(const cv::Mat& mask, int x0, int x1) {
  double sum = 0;
  int n = 0;
  for (int y = 0; y < mask.rows; ++y)
    for (int x = x0; x < x1; ++x)
      if (mask.at<uchar>(y, x)) {
        sum += y;
        ++n;
      }
  return n ? sum / n : -1;
}
int count(const cv::Mat& mask, int x0, int x1) { return cv::countNonZero(mask.colRange(x0, x1)); }

Series line(const std::string& label, std::function<double(double)> f, int n = 200, double x0 = 0, double x1 = 1) {
  Series s{label, {}, {}, false};
  for (int i = 0; i < n; ++i) {
    const double x = x0 + (x1 - x0) * i / (n - 1);
    s.x.push_back(x);
    s.y.push_back(f(x));
  }
  return s;
}

cv::Mat read(const std::string& path) {
  cv::Mat m = kg::data::decode_image(path, 3);
  REQUIRE_FALSE(m.empty());
  cv::cvtColor(m, m, cv::COLOR_RGB2BGR);  // the checks below name colours in OpenCV's BGR
  return m;
}

}  // namespace

TEST_CASE("a line chart decodes at the requested size with lines where the data is", "[unit][plot]") {
  kg::test::TempDir d;
  PlotOptions o;
  o.title = "loss";
  o.xlabel = "epoch";
  o.ylabel = "value";
  o.width = 640;
  o.height = 400;
  // Unlabelled: no legend to paint over the lines.
  kg::report::line_plot(d / "out/chart.png",
                        {line("", [](double x) { return x; }), line("", [](double x) { return 1 - x; })}, o);
  cv::Mat img = read(d / "out/chart.png");
  CHECK(img.cols == 640);
  CHECK(img.rows == 400);
  CHECK_FALSE(std::filesystem::exists(d / "out/chart.png.tmp"));

  auto rising = mask_of(img, kg::report::series_color(0));
  auto falling = mask_of(img, kg::report::series_color(1));
  const int third = img.cols / 3;
  REQUIRE(count(rising, 0, third) > 20);
  REQUIRE(count(rising, 2 * third, img.cols) > 20);
  REQUIRE(count(falling, 0, third) > 20);
  // Image rows grow downwards: a rising line is low on the left and high on the right.
  CHECK(mean_row(rising, 0, third) > mean_row(rising, 2 * third, img.cols) + img.rows / 4);
  CHECK(mean_row(falling, 0, third) < mean_row(falling, 2 * third, img.cols) - img.rows / 4);
  // Neither colour leaks into the margins (left of the y axis labels, below the x axis).
  CHECK(count(rising, 0, 30) == 0);
  CHECK(cv::countNonZero(rising.rowRange(img.rows - 30, img.rows)) == 0);
}

TEST_CASE("non-finite points leave a gap", "[unit][plot]") {
  kg::test::TempDir d;
  PlotOptions o;
  auto s = line("", [](double x) { return (x > 0.4 && x < 0.6) ? std::nan("") : x; });
  s.y[0] = std::numeric_limits<double>::infinity();  // also skipped, and not stretching the range
  kg::report::line_plot(d / "gap.png", {s}, o);
  cv::Mat img = read(d / "gap.png");
  auto m = mask_of(img, kg::report::series_color(0));
  // The plot spans roughly columns 60..880; the gap is the middle fifth.
  CHECK(count(m, 440, 480) == 0);
  CHECK(count(m, 150, 300) > 20);
  CHECK(count(m, 600, 800) > 20);
}

TEST_CASE("log axes skip non-positive values and still draw the rest", "[unit][plot]") {
  kg::test::TempDir d;
  PlotOptions o;
  o.log_y = true;
  o.log_x = true;
  // An lr that anneals to exactly 0 at its end (x up to 1), and one with negative values on its left half.
  auto lr = line(
      "", [](double x) { return 1e-3 * (1 - x); }, 200, 1e-3, 1.0);
  auto half = line(
      "", [](double x) { return x < 0.1 ? -1.0 : 1e-4; }, 200, 1e-3, 1.0);
  half.x[0] = 0.0;  // non-positive x is skipped too
  kg::report::line_plot(d / "log.png", {lr, half}, o);
  cv::Mat img = read(d / "log.png");
  CHECK(img.cols == 900);
  auto a = mask_of(img, kg::report::series_color(0));
  auto b = mask_of(img, kg::report::series_color(1));
  CHECK(cv::countNonZero(a) > 100);
  // x = 0.1 sits two thirds along a log axis from 1e-3 to 1: the second series starts there.
  CHECK(count(b, 0, 500) == 0);
  CHECK(count(b, 700, 880) > 20);
}

TEST_CASE("an empty chart is still a valid PNG", "[unit][plot]") {
  kg::test::TempDir d;
  PlotOptions o;
  o.width = 300;
  o.height = 200;
  o.log_y = true;
  kg::report::line_plot(d / "empty.png", {}, o);
  cv::Mat img = read(d / "empty.png");
  CHECK(img.cols == 300);
  CHECK(img.rows == 200);
  kg::report::line_plot(d / "nan.png", {Series{"nothing", {1, 2}, {std::nan(""), -1}, false}}, o);
  CHECK(read(d / "nan.png").rows == 200);
}

TEST_CASE("markers and legends are drawn, stacked charts add up", "[unit][plot]") {
  kg::test::TempDir d;
  PlotOptions o;
  o.log_x = true;
  auto loss = line(
      "loss", [](double x) { return 2.0 - std::log10(x); }, 100, 1e-6, 10.0);
  kg::report::line_plot(d / "finder.png", {loss}, o, {Marker{1e-3, 5.0, "valley 1e-3"}});
  cv::Mat img = read(d / "finder.png");
  auto m = mask_of(img, kg::report::marker_color(), 10);
  REQUIRE(cv::countNonZero(m) > 20);
  // 1e-3 is three sevenths along the log axis from 1e-6 to 10: the dot (the leftmost marker pixels, its
  // label is written to the right of it) sits there.
  std::vector<cv::Point> at;
  cv::findNonZero(m, at);
  int left = img.cols;
  for (auto& p : at) left = std::min(left, p.x);
  CHECK(left + 4 > 330);
  CHECK(left + 4 < 450);
  // The legend's swatch is in the top right corner.
  CHECK(count(mask_of(img, kg::report::series_color(0)).rowRange(0, 80), 700, 900) > 10);

  kg::report::Chart top{{loss}, o, {}}, bottom{{loss}, o, {}};
  bottom.options.height = 300;
  kg::report::stacked_plot(d / "two.png", {top, bottom});
  cv::Mat two = read(d / "two.png");
  CHECK(two.rows == 560 + 300);
  CHECK(two.cols == 900);
}

TEST_CASE("tick labels are short and use 1e-4 style on log axes", "[unit][plot]") {
  auto labels = [](const std::vector<kg::report::AxisTick>& ticks) {
    std::vector<std::string> out;
    for (auto& t : ticks)
      if (!t.label.empty()) out.push_back(t.label);
    return out;
  };
  using V = std::vector<std::string>;
  CHECK(labels(kg::report::axis_ticks(1e-7, 10, true)) ==
        V{"1e-7", "1e-6", "1e-5", "1e-4", "1e-3", "0.01", "0.1", "1", "10"});
  CHECK(labels(kg::report::axis_ticks(1e-5, 1e-3, true)) == V{"1e-5", "2e-5", "5e-5", "1e-4", "2e-4", "5e-4", "1e-3"});
  CHECK(labels(kg::report::axis_ticks(0, 1, false)) ==
        V{"0", "0.1", "0.2", "0.3", "0.4", "0.5", "0.6", "0.7", "0.8", "0.9", "1.0"});
  CHECK(labels(kg::report::axis_ticks(0, 10, false, 5)) == V{"0", "2", "4", "6", "8", "10"});
  CHECK(labels(kg::report::axis_ticks(0, 3e-4, false, 6)) ==
        V{"0", "5e-5", "1e-4", "1.5e-4", "2e-4", "2.5e-4", "3e-4"});
  // Many decades: every other decade keeps the labels apart.
  CHECK(labels(kg::report::axis_ticks(1e-12, 1e4, true, 8)) ==
        V{"1e-12", "1e-10", "1e-8", "1e-6", "1e-4", "0.01", "1", "100", "1e4"});
}

TEST_CASE("plot errors: too small is a ConfigError, an unwritable path a DataError", "[unit][plot]") {
  kg::test::TempDir d;
  PlotOptions small;
  small.width = 100;
  CHECK_THROWS_AS(kg::report::line_plot(d / "small.png", {}, small), kg::ConfigError);
  const std::string file = d.write("a_file", "x");
  try {
    kg::report::line_plot(file + "/chart.png", {}, PlotOptions{});
    FAIL("no DataError");
  } catch (const kg::DataError& e) {
    CHECK_THAT(e.what(), Catch::Contains("chart.png"));
  }
}

}  // namespace KG_UNITY_ID
}  // namespace
