// Progress reporting: a live bar on a terminal, plain periodic lines elsewhere (notebook cells, CI
// logs), nothing with --quiet. Writes to stderr so stdout keeps only results.
#pragma once
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <map>
#include <string>

namespace kg::train {

struct ProgressStyle {
  bool quiet = false;
  bool tty = false;          // live bar (\r) instead of lines
  double line_every_s = 10;  // plain-line interval
  int columns = 0;           // terminal width (0 = unknown); the bar never passes min(columns, 100) - 1
  std::FILE* out = nullptr;  // nullptr = stderr (tests give a temporary file)
};

// Seconds between two redraws of the live bar: a pseudo-terminal a notebook renders gets at most two a second.
inline constexpr double kRedrawEveryS = 0.5;
inline constexpr int kMaxColumns = 100;

// Whether `environ` is a notebook kernel's (Kaggle, Colab, Jupyter/IPython): `!kgtrain ...` runs under a
// pseudo-terminal there that re-renders carriage returns poorly, so the app prints plain lines instead.
bool in_notebook(const std::map<std::string, std::string>& environ);

class Progress {
 public:
  Progress(ProgressStyle style, std::string label, int64_t total);
  // Called after each step; `loss()` is evaluated only when a line is printed (it may sync a GPU).
  template <class LossFn>
  void update(int64_t done, LossFn loss, double lr, int64_t images) {
    done_ = done;
    lr_ = lr;
    images_ = images;
    if (due()) {
      loss_ = loss();
      print(false);
    }
  }
  void finish(double final_loss);

 private:
  bool due();
  void print(bool final);
  ProgressStyle style_;
  std::string label_;
  int64_t total_, done_ = 0, images_ = 0;
  double loss_ = 0, lr_ = 0;
  std::chrono::steady_clock::time_point start_, last_;
  size_t shown_ = 0;  // length of the bar now on screen (a shorter redraw blanks the rest)
};

}  // namespace kg::train
