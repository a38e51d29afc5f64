// Line charts as PNG files, drawn with OpenCV: lr schedules, loss / metric curves, the lr finder.
// Readable without a viewer's help: axes with tick labels (1e-4 style on log axes), a light grid, a legend
// for labelled series, a title. Drawing is deterministic (same data -> same bytes).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace kg::report {

// x and y have the same length. Non-finite points, and non-positive ones on a log axis, are skipped:
// the line has a gap there (an lr that anneals to exactly 0 still plots on a log axis).
struct Series {
  std::string label;  // shown in the legend; a chart whose series are all unlabelled has no legend
  std::vector<double> x, y;
  bool points = false;  // dots instead of a line
};
struct Marker {  // a labelled dot (e.g. the lr finder's suggestions)
  double x, y;
  std::string label;
};
struct PlotOptions {
  std::string title, xlabel, ylabel;
  bool log_x = false, log_y = false;
  int width = 900, height = 560;  // pixels; at least 240 x 160
};

// False in a build without OpenCV: the drawing functions below then throw a DataError saying so, and
// callers that draw on their own (the plots callback, lr-find) skip their charts with a log line.
bool can_plot();

// Draws the chart and writes a PNG atomically (encoded in memory, then kg::write_file_atomic). An empty
// chart is still a valid PNG. ConfigError for a size below the minimum; DataError when it cannot write.
void line_plot(const std::string& png_path, const std::vector<Series>& series, const PlotOptions& o,
               const std::vector<Marker>& markers = {});

// Several charts stacked top to bottom in one PNG (e.g. lr above momentum), each at its own size.
struct Chart {
  std::vector<Series> series;
  PlotOptions options;
  std::vector<Marker> markers;
};
void stacked_plot(const std::string& png_path, const std::vector<Chart>& charts);
// The PNG bytes stacked_plot would write.
std::string render_png(const std::vector<Chart>& charts);

// The ticks an axis over [lo, hi] gets (the chart pads the data range a little first): value and label,
// "" for unlabelled minor ticks. Labels are short: "0.25", "1e-4", "2.5e-5"; log axes tick decades
// (plus 2x and 5x over at most two decades).
struct AxisTick {
  double value;
  std::string label;
};
std::vector<AxisTick> axis_ticks(double lo, double hi, bool log, int max_ticks = 8);

// Series i is drawn in series_color(i % 10) (matplotlib's tab10); markers in marker_color().
struct Rgb {
  uint8_t r, g, b;
};
Rgb series_color(size_t i);
Rgb marker_color();

}  // namespace kg::report
