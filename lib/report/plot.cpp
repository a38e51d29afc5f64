#include "report/plot.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>

#if KG_WITH_OPENCV
#include <opencv2/core.hpp>
#include <opencv2/imgproc.hpp>
#endif

#include "core/error.h"
#include "core/fs.h"
#include "data/image_io.h"

namespace kg::report {

namespace {

#if KG_WITH_OPENCV
constexpr int kFont = cv::FONT_HERSHEY_SIMPLEX;
constexpr double kTickScale = 0.42, kLabelScale = 0.5, kTitleScale = 0.6;
constexpr int kShift = 4;  // sub-pixel bits for cv::line / cv::circle coordinates
constexpr double kScale = 1 << kShift;
const cv::Scalar kWhite(255, 255, 255), kInk(40, 40, 40), kGrid(228, 228, 228), kMinorGrid(242, 242, 242),
    kAxis(90, 90, 90);

cv::Scalar bgr(Rgb c) { return cv::Scalar(c.b, c.g, c.r); }

cv::Size text_size(const std::string& s, double scale, int thickness = 1) {
  int base = 0;
  return cv::getTextSize(s, kFont, scale, thickness, &base);
}
// Text whose left baseline is at `org`.
void text(cv::Mat& img, const std::string& s, cv::Point org, double scale, const cv::Scalar& color, int thickness = 1) {
  cv::putText(img, s, org, kFont, scale, color, thickness, cv::LINE_AA);
}
#endif

// "1e-4", "2.5e-3", "0.01", "150": compact labels; scientific for very small or large magnitudes.
std::string sci(double v, int decimals) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*e", decimals, v);
  std::string s(buf);
  auto e = s.find('e');
  std::string mant = s.substr(0, e);
  if (mant.find('.') != std::string::npos) {  // 1.50 -> 1.5, 1.0 -> 1
    mant.erase(mant.find_last_not_of('0') + 1);
    if (mant.back() == '.') mant.pop_back();
  }
  return mant + "e" + std::to_string(std::stoi(s.substr(e + 1)));
}
std::string fixed(double v, int decimals) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", std::max(decimals, 0), v);
  return buf;
}

// A labelled tick position along one axis, in the axis' (possibly log10) coordinate.
struct Tick {
  double pos;
  std::string label;  // "" for a minor tick (grid only)
};

struct Axis {
  bool log = false;
  double lo = 0, hi = 1;  // in axis coordinates (log10 of the value on a log axis)
  double map(double v) const { return log ? std::log10(v) : v; }
  bool usable(double v) const { return std::isfinite(v) && (!log || v > 0); }
};

// Range over the usable values, padded so nothing sits on the frame.
void fit_range(Axis& a, const std::vector<double>& values) {
  double lo = std::numeric_limits<double>::infinity(), hi = -lo;
  for (double v : values)
    if (a.usable(v)) {
      lo = std::min(lo, a.map(v));
      hi = std::max(hi, a.map(v));
    }
  if (!std::isfinite(lo)) {
    lo = 0;
    hi = 1;
  } else if (hi - lo <= 1e-12 * std::max(std::abs(lo), std::abs(hi))) {
    const double d = a.log ? 0.5 : (lo == 0 ? 1.0 : std::abs(lo) * 0.1);
    lo -= d;
    hi += d;
  }
  const double pad = (hi - lo) * 0.04;
  a.lo = lo - pad;
  a.hi = hi + pad;
}

std::vector<Tick> linear_ticks(const Axis& a, int max_ticks) {
  const double raw = (a.hi - a.lo) / std::max(max_ticks, 2);
  const double mag = std::pow(10.0, std::floor(std::log10(raw)));
  const double n = raw / mag;
  const double step = (n < 1.5 ? 1 : n < 3 ? 2 : n < 7 ? 5 : 10) * mag;
  const double big = std::max(std::abs(a.lo), std::abs(a.hi));
  const bool use_sci = big < 1e-3 || big >= 1e6;
  const int step_exp = static_cast<int>(std::floor(std::log10(step) + 1e-9));
  std::vector<Tick> out;
  for (double k = std::ceil(a.lo / step); k * step <= a.hi + step * 1e-9; k += 1) {
    double v = k * step;
    if (std::abs(v) < step * 1e-9) v = 0;
    std::string label;
    if (v == 0)
      label = "0";
    else if (use_sci)
      label = sci(v, std::max(0, static_cast<int>(std::floor(std::log10(std::abs(v)) + 1e-9)) - step_exp));
    else
      label = fixed(v, -step_exp);
    out.push_back({v, label});
  }
  return out;
}

std::string log_label(double v) {
  const int k = static_cast<int>(std::floor(std::log10(v) + 1e-9));
  const double m = v / std::pow(10.0, k);
  if (k >= -2 && k <= 3) return fixed(v, std::max(0, -k));
  return (std::abs(m - std::round(m)) < 1e-6 ? std::to_string(static_cast<int>(std::round(m))) : fixed(m, 1)) + "e" +
         std::to_string(k);
}

std::vector<Tick> log_ticks(const Axis& a, int max_ticks) {
  std::vector<Tick> out;
  const int first = static_cast<int>(std::floor(a.lo)), last = static_cast<int>(std::ceil(a.hi));
  const int decades = last - first;
  const int every = std::max(1, (decades + max_ticks - 1) / std::max(max_ticks, 1));
  const bool sub_labels = decades <= 2;  // few decades: label 2x and 5x too
  for (int k = first; k <= last; ++k)
    for (int m = 1; m <= 9; ++m) {
      const double v = m * std::pow(10.0, k), p = std::log10(v);
      if (p < a.lo - 1e-12 || p > a.hi + 1e-12) continue;
      if (m == 1 && k % every == 0)
        out.push_back({p, log_label(v)});
      else if (m == 1)
        out.push_back({p, ""});  // an unlabelled decade keeps its grid line
      else if (sub_labels && (m == 2 || m == 5))
        out.push_back({p, log_label(v)});
      else if (decades <= 6)
        out.push_back({p, ""});
    }
  return out;
}

std::vector<Tick> ticks(const Axis& a, int max_ticks) {
  return a.log ? log_ticks(a, max_ticks) : linear_ticks(a, max_ticks);
}

#if KG_WITH_OPENCV
// The plot area inside the chart and its two axes: where data lands in pixels.
struct Frame {
  Axis ax, ay;
  cv::Rect area;
  double px(double v) const { return area.x + (ax.map(v) - ax.lo) / (ax.hi - ax.lo) * (area.width - 1); }
  double py(double v) const { return area.y + (1.0 - (ay.map(v) - ay.lo) / (ay.hi - ay.lo)) * (area.height - 1); }
  // A tick position (axis coordinates) in whole pixels of the chart.
  int fx(double p) const {
    return static_cast<int>(std::lround(area.x + (p - ax.lo) / (ax.hi - ax.lo) * (area.width - 1)));
  }
  int fy(double p) const {
    return static_cast<int>(std::lround(area.y + (1.0 - (p - ay.lo) / (ay.hi - ay.lo)) * (area.height - 1)));
  }
  // Data (x, y) inside the plot area's view, in 1/2^kShift pixels.
  cv::Point to_pt(double x, double y) const {
    return cv::Point(static_cast<int>(std::lround((px(x) - area.x) * kScale)),
                     static_cast<int>(std::lround((py(y) - area.y) * kScale)));
  }
};

void draw_grid(cv::Mat& img, const Frame& f, const std::vector<Tick>& xt, const std::vector<Tick>& yt, int width,
               int height) {
  const cv::Rect& area = f.area;
  for (const auto& t : xt) {
    const int x = f.fx(t.pos);
    cv::line(img, {x, area.y}, {x, area.y + area.height - 1}, t.label.empty() ? kMinorGrid : kGrid, 1);
    if (t.label.empty()) continue;
    cv::line(img, {x, area.y + area.height}, {x, area.y + area.height + 4}, kAxis, 1);
    const auto sz = text_size(t.label, kTickScale);
    text(img, t.label, {std::clamp(x - sz.width / 2, 0, width - sz.width), area.y + area.height + 8 + sz.height},
         kTickScale, kInk);
  }
  for (const auto& t : yt) {
    const int y = f.fy(t.pos);
    cv::line(img, {area.x, y}, {area.x + area.width - 1, y}, t.label.empty() ? kMinorGrid : kGrid, 1);
    if (t.label.empty()) continue;
    cv::line(img, {area.x - 4, y}, {area.x - 1, y}, kAxis, 1);
    const auto sz = text_size(t.label, kTickScale);
    text(img, t.label, {area.x - 7 - sz.width, std::clamp(y + sz.height / 2, sz.height, height - 2)}, kTickScale, kInk);
  }
  cv::rectangle(img, area, kAxis, 1);
}

void draw_titles(cv::Mat& img, const cv::Rect& area, const PlotOptions& o, bool empty) {
  if (!o.title.empty()) {
    const auto sz = text_size(o.title, kTitleScale);
    text(img, o.title, {std::max(4, area.x + (area.width - sz.width) / 2), 24}, kTitleScale, kInk);
  }
  if (!o.xlabel.empty()) {
    const auto sz = text_size(o.xlabel, kLabelScale);
    text(img, o.xlabel, {std::max(4, area.x + (area.width - sz.width) / 2), o.height - 10}, kLabelScale, kInk);
  }
  if (!o.ylabel.empty()) {  // drawn horizontally on a strip, then turned a quarter counter-clockwise
    const auto sz = text_size(o.ylabel, kLabelScale);
    cv::Mat strip(sz.height + 8, std::min(sz.width + 4, area.height), CV_8UC3, kWhite);
    text(strip, o.ylabel, {2, sz.height + 2}, kLabelScale, kInk);
    cv::Mat turned;
    cv::rotate(strip, turned, cv::ROTATE_90_COUNTERCLOCKWISE);
    const int y0 = area.y + (area.height - turned.rows) / 2;
    turned.copyTo(img(cv::Rect(4, std::max(0, y0), turned.cols, turned.rows)));
  }
  if (empty) {
    const auto sz = text_size("no data", kLabelScale);
    text(img, "no data", {area.x + (area.width - sz.width) / 2, area.y + area.height / 2}, kLabelScale, kAxis);
  }
}

// One series into the plot area's view `plot` (which clips it), in colour `col`.
void draw_series(cv::Mat& plot, const Frame& f, const Series& s, const cv::Scalar& col) {
  std::vector<cv::Point> run;
  cv::Point pending;  // the latest point skipped as too close to the line so far (kept if it ends the run)
  bool has_pending = false;
  auto flush = [&]() {
    if (has_pending) run.push_back(pending);
    has_pending = false;
    if (run.size() == 1)
      cv::circle(plot, run[0], 2 << kShift, col, cv::FILLED, cv::LINE_AA, kShift);
    else if (run.size() > 1)
      cv::polylines(plot, run, false, col, 2, cv::LINE_AA, kShift);
    run.clear();
  };
  for (size_t i = 0; i < s.x.size(); ++i) {
    if (!f.ax.usable(s.x[i]) || !f.ay.usable(s.y[i])) {  // a gap
      flush();
      continue;
    }
    const cv::Point p = f.to_pt(s.x[i], s.y[i]);
    if (s.points) {
      cv::circle(plot, p, 3 << kShift, col, cv::FILLED, cv::LINE_AA, kShift);
      continue;
    }
    // Long traces (an lr per update over 1e5 updates): points within half a pixel of the last one drawn
    // add nothing but overdraw, which thickens the anti-aliased line.
    const int half = 1 << (kShift - 1);
    if (!run.empty() && std::abs(p.x - run.back().x) < half && std::abs(p.y - run.back().y) < half) {
      pending = p;
      has_pending = true;
      continue;
    }
    has_pending = false;
    run.push_back(p);
  }
  flush();
}

void draw_markers(cv::Mat& plot, const Frame& f, const std::vector<Marker>& markers) {
  const cv::Scalar mcol = bgr(marker_color());
  for (const auto& m : markers) {
    if (!f.ax.usable(m.x) || !f.ay.usable(m.y)) continue;
    const cv::Point p = f.to_pt(m.x, m.y);
    cv::circle(plot, p, 6 << kShift, kWhite, cv::FILLED, cv::LINE_AA, kShift);
    cv::circle(plot, p, 4 << kShift, mcol, cv::FILLED, cv::LINE_AA, kShift);
    if (m.label.empty()) continue;
    const auto sz = text_size(m.label, kTickScale);
    const int x = static_cast<int>(p.x / kScale), y = static_cast<int>(p.y / kScale);
    const int tx = x + 9 + sz.width < f.area.width ? x + 9 : x - 9 - sz.width;
    const int ty = y - 8 - sz.height >= 0 ? y - 8 : y + 8 + sz.height;
    text(plot, m.label, {tx, ty}, kTickScale, mcol);
  }
}

// Legend, top right inside the plot area, for the labelled series.
void draw_legend(cv::Mat& img, const cv::Rect& area, const std::vector<Series>& series) {
  std::vector<size_t> labelled;
  for (size_t i = 0; i < series.size(); ++i)
    if (!series[i].label.empty()) labelled.push_back(i);
  if (labelled.empty()) return;
  int w = 0;
  const int row = 20;
  for (size_t i : labelled) w = std::max(w, text_size(series[i].label, kTickScale).width);
  const cv::Rect box(area.x + area.width - w - 48, area.y + 8, w + 40, row * static_cast<int>(labelled.size()) + 8);
  cv::rectangle(img, box, kWhite, cv::FILLED);
  cv::rectangle(img, box, kGrid, 1);
  for (size_t r = 0; r < labelled.size(); ++r) {
    const auto& s = series[labelled[r]];
    const int y = box.y + 4 + row * static_cast<int>(r) + row / 2;
    const cv::Scalar col = bgr(series_color(labelled[r]));
    if (s.points)
      cv::circle(img, {box.x + 16, y}, 3, col, cv::FILLED, cv::LINE_AA);
    else
      cv::line(img, {box.x + 6, y}, {box.x + 26, y}, col, 2, cv::LINE_AA);
    text(img, s.label, {box.x + 32, y + 5}, kTickScale, kInk);
  }
}

cv::Mat render_chart(const Chart& c) {
  const PlotOptions& o = c.options;
  KG_CHECK(o.width >= 240 && o.height >= 160, ConfigError, "plot size ", o.width, "x", o.height,
           " is too small: expected at least 240x160 pixels");
  for (const auto& s : c.series)
    KG_ASSERT(s.x.size() == s.y.size(), "series '", s.label, "' has ", s.x.size(), " x and ", s.y.size(), " y values");
  cv::Mat img(o.height, o.width, CV_8UC3, kWhite);

  Frame f{Axis{o.log_x}, Axis{o.log_y}, {}};
  std::vector<double> xs, ys;
  for (const auto& s : c.series)
    for (size_t i = 0; i < s.x.size(); ++i)
      if (f.ax.usable(s.x[i]) && f.ay.usable(s.y[i])) {
        xs.push_back(s.x[i]);
        ys.push_back(s.y[i]);
      }
  const bool empty = xs.empty();
  for (const auto& m : c.markers)
    if (f.ax.usable(m.x) && f.ay.usable(m.y)) {
      xs.push_back(m.x);
      ys.push_back(m.y);
    }
  fit_range(f.ax, xs);
  fit_range(f.ay, ys);

  // Layout: the y tick labels decide the left margin.
  const int top = o.title.empty() ? 14 : 38, bottom = o.xlabel.empty() ? 30 : 52, right = 22;
  const auto yt = ticks(f.ay, std::max(2, (o.height - top - bottom) / 45));
  int label_w = 0;
  for (const auto& t : yt) label_w = std::max(label_w, text_size(t.label, kTickScale).width);
  const int left = label_w + 14 + (o.ylabel.empty() ? 6 : 26);
  f.area = cv::Rect(left, top, std::max(o.width - left - right, 20), std::max(o.height - top - bottom, 20));
  const auto xt = ticks(f.ax, std::max(2, f.area.width / 90));

  draw_grid(img, f, xt, yt, o.width, o.height);
  draw_titles(img, f.area, o, empty);
  cv::Mat plot = img(f.area);  // series and markers are clipped to the plot area by drawing into its view
  for (size_t si = 0; si < c.series.size(); ++si) draw_series(plot, f, c.series[si], bgr(series_color(si)));
  draw_markers(plot, f, c.markers);
  draw_legend(img, f.area, c.series);
  return img;
}

#endif

}  // namespace

std::vector<AxisTick> axis_ticks(double lo, double hi, bool log, int max_ticks) {
  Axis a{log};
  KG_ASSERT(a.usable(lo) && a.usable(hi) && lo < hi, "axis range [", lo, ", ", hi, "]");
  a.lo = a.map(lo);
  a.hi = a.map(hi);
  std::vector<AxisTick> out;
  for (const auto& t : ticks(a, max_ticks)) out.push_back({log ? std::pow(10.0, t.pos) : t.pos, t.label});
  return out;
}

Rgb series_color(size_t i) {
  static const Rgb tab10[] = {{31, 119, 180}, {255, 127, 14},  {44, 160, 44},   {214, 39, 40},  {148, 103, 189},
                              {140, 86, 75},  {227, 119, 194}, {127, 127, 127}, {188, 189, 34}, {23, 190, 207}};
  return tab10[i % 10];
}
Rgb marker_color() { return {200, 0, 90}; }

bool can_plot() { return KG_WITH_OPENCV != 0; }

std::string render_png(const std::vector<Chart>& charts) {
#if !KG_WITH_OPENCV
  throw DataError(
      "PNG charts are drawn with OpenCV, which this kgtrain was built without (Debian/Ubuntu: apt-get "
      "install libopencv-dev, then rebuild); the numbers are in metrics.jsonl / lr_find.json");
#else
  std::vector<cv::Mat> parts;
  int width = 1, height = 0;
  for (const auto& c : charts) {
    parts.push_back(render_chart(c));
    width = std::max(width, parts.back().cols);
    height += parts.back().rows;
  }
  cv::Mat img(std::max(height, 1), width, CV_8UC3, kWhite);
  int y = 0;
  for (const auto& p : parts) {
    p.copyTo(img(cv::Rect(0, y, p.cols, p.rows)));
    y += p.rows;
  }
  cv::cvtColor(img, img, cv::COLOR_BGR2RGB);  // drawn in OpenCV's BGR; encode_png takes RGB
  std::string bytes;
  data::encode_png(img, bytes);
  return bytes;
#endif
}

void stacked_plot(const std::string& png_path, const std::vector<Chart>& charts) {
  const std::string bytes = render_png(charts);
  with_context("while writing the chart " + png_path, [&] { write_file_atomic(png_path, bytes); });
}

void line_plot(const std::string& png_path, const std::vector<Series>& series, const PlotOptions& o,
               const std::vector<Marker>& markers) {
  stacked_plot(png_path, {Chart{series, o, markers}});
}

}  // namespace kg::report
