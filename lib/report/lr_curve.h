// The learning-rate curve of a schedule as a PNG: lr against the epoch, and the momentum / beta1 when the
// schedule cycles it. Draws anything with lr_at(step) and momentum_at(step) (an optim::Schedule, a
// train::Plan), so report/ depends on neither.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace kg::report {

// The curve at updates 0..n-1 (optimizer updates, never micro-batches).
struct LrCurve {
  std::vector<double> lr;
  std::vector<std::optional<double>> momentum;  // one per update, or empty; no value: momentum left alone
};

struct LrCurveOptions {
  int64_t steps_per_epoch = 1;  // the x axis is update / steps_per_epoch, in epochs
  std::string title;            // of the lr chart; "" = "learning-rate schedule: N updates, S per epoch"
  bool momentum_file = false;   // the momentum chart in its own "<stem>_momentum.png" instead of below the lr
};

struct LrCurvePlot {
  std::string lr_png;        // the PNG asked for
  std::string momentum_png;  // the separate momentum PNG when one was written, else ""
  double peak_lr = 0;        // the largest lr on the curve
};

// Draws `curve` into `png` (kg::write_file_atomic: parent folders are created). The momentum chart (when
// any update has a momentum) goes below the lr chart in the same PNG, or, with o.momentum_file, into
// "<png without extension>_momentum.png". DataError when a file cannot be written or this build has no
// OpenCV (report::can_plot()).
LrCurvePlot plot_lr_curve(const std::string& png, const LrCurve& curve, const LrCurveOptions& o = {});

// The curve of `schedule` over updates 0..total_steps-1.
template <class Schedule>
LrCurve sample_lr_curve(const Schedule& schedule, int64_t total_steps) {
  LrCurve c;
  for (int64_t s = 0; s < total_steps; ++s) {
    c.lr.push_back(schedule.lr_at(s));
    c.momentum.push_back(schedule.momentum_at(s));
  }
  return c;
}

template <class Schedule, class = decltype(std::declval<const Schedule&>().lr_at(int64_t{0}))>
LrCurvePlot plot_lr_curve(const std::string& png, const Schedule& schedule, int64_t total_steps,
                          const LrCurveOptions& o = {}) {
  return plot_lr_curve(png, sample_lr_curve(schedule, total_steps), o);
}

}  // namespace kg::report
