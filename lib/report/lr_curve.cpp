#include "report/lr_curve.h"

#include <algorithm>
#include <cmath>
#include <filesystem>

#include "report/plot.h"

namespace kg::report {

LrCurvePlot plot_lr_curve(const std::string& png, const LrCurve& curve, const LrCurveOptions& o) {
  const size_t n = curve.lr.size();
  const double spe = static_cast<double>(std::max<int64_t>(o.steps_per_epoch, 1));
  Series lr{"", {}, curve.lr, false}, mom{"", {}, {}, false};
  bool has_momentum = false;
  for (size_t i = 0; i < n; ++i) {
    const double x = static_cast<double>(i) / spe;
    lr.x.push_back(x);
    const bool has = i < curve.momentum.size() && curve.momentum[i].has_value();
    has_momentum = has_momentum || has;
    mom.x.push_back(x);
    mom.y.push_back(has ? *curve.momentum[i] : std::nan(""));
  }
  LrCurvePlot out;
  out.lr_png = png;
  if (n > 0) out.peak_lr = *std::max_element(curve.lr.begin(), curve.lr.end());

  PlotOptions top;
  top.title = !o.title.empty() ? o.title
                               : "learning-rate schedule: " + std::to_string(n) + " updates, " +
                                     std::to_string(o.steps_per_epoch) + " per epoch";
  top.xlabel = "epoch";
  top.ylabel = "learning rate";
  PlotOptions bottom = top;
  bottom.title = "momentum / beta1";
  bottom.ylabel = "momentum";
  if (!has_momentum) {
    line_plot(png, {lr}, top);
  } else if (o.momentum_file) {
    line_plot(png, {lr}, top);
    out.momentum_png = std::filesystem::path(png).replace_extension("").string() + "_momentum.png";
    line_plot(out.momentum_png, {mom}, bottom);
  } else {
    bottom.height = 360;
    stacked_plot(png, {{{lr}, top, {}}, {{mom}, bottom, {}}});
  }
  return out;
}

}  // namespace kg::report
