// Matrices as PNG heatmaps (interpret's confusion matrix: counts and row-normalised side by side) and the
// colour map of Grad-CAM overlays. Drawn with OpenCV; DataError in a build without it.
#pragma once
#include <string>
#include <vector>

#include "report/plot.h"

namespace kg::report {

struct Matrix {
  std::vector<std::vector<double>> values;  // rows x columns
  std::string title;
  bool integers = false;  // cell text as counts ("12") or fractions ("0.85")
};

// Matrices side by side, each a square grid of cells shaded by value / (its largest value), the value written in
// each cell, `labels` along both axes (rows: `ylabel`, columns: `xlabel`). Labels are cut to 14 characters.
std::string heatmap_png(const std::vector<Matrix>& matrices, const std::vector<std::string>& labels,
                        const std::string& xlabel = "predicted", const std::string& ylabel = "actual");

// Matplotlib's "jet" colour of v in [0, 1] (clamped): blue, cyan, yellow, red.
Rgb jet(double v);

}  // namespace kg::report
