// Progress reporting: a live bar on a terminal, plain periodic lines elsewhere (notebook cells, CI
// logs), nothing with --quiet. Writes to stderr so stdout keeps only results.
#pragma once
#include <chrono>
#include <cstdint>
#include <string>

namespace kg::train {

struct ProgressStyle {
  bool quiet = false;
  bool tty = false;          // live bar (\r) instead of lines
  double line_every_s = 10;  // plain-line interval
};

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
  bool open_ = false;
};

}  // namespace kg::train
