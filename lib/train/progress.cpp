#include "train/progress.h"

#include <cstdio>

namespace kg::train {

namespace {
std::string clock_text(double s) {
  char buf[32];
  int t = static_cast<int>(s + 0.5);
  if (t >= 3600)
    std::snprintf(buf, sizeof buf, "%d:%02d:%02d", t / 3600, t / 60 % 60, t % 60);
  else
    std::snprintf(buf, sizeof buf, "%d:%02d", t / 60, t % 60);
  return buf;
}
}  // namespace

Progress::Progress(ProgressStyle style, std::string label, int64_t total)
    : style_(style), label_(std::move(label)), total_(total), start_(std::chrono::steady_clock::now()), last_(start_) {}

bool Progress::due() {
  if (style_.quiet) return false;
  auto now = std::chrono::steady_clock::now();
  double since = std::chrono::duration<double>(now - last_).count();
  if (style_.tty ? since < 0.2 : since < style_.line_every_s) return false;
  last_ = now;
  return true;
}

void Progress::print(bool final) {
  double el = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  double ips = el > 0 ? images_ / el : 0;
  double eta = done_ > 0 ? el * static_cast<double>(total_ - done_) / static_cast<double>(done_) : 0;
  char buf[256];
  if (style_.tty) {
    const int width = 24;
    int fill = total_ > 0 ? static_cast<int>(width * done_ / total_) : width;
    std::string bar(static_cast<size_t>(fill), '#');
    bar.resize(width, '.');
    std::snprintf(buf, sizeof buf, "\r%s [%s] %lld/%lld loss %.4f lr %.2e %.0f img/s %s %s  ", label_.c_str(),
                  bar.c_str(), static_cast<long long>(done_), static_cast<long long>(total_), loss_, lr_, ips,
                  final ? "in" : "eta", clock_text(final ? el : eta).c_str());
    std::fputs(buf, stderr);
    if (final) std::fputs("\n", stderr);
    open_ = !final;
  } else {
    std::snprintf(buf, sizeof buf, "%s step %lld/%lld loss %.4f lr %.3e %.0f img/s %s %s\n", label_.c_str(),
                  static_cast<long long>(done_), static_cast<long long>(total_), loss_, lr_, ips,
                  final ? "took" : "eta", clock_text(final ? el : eta).c_str());
    std::fputs(buf, stderr);
  }
  std::fflush(stderr);
}

void Progress::finish(double final_loss) {
  loss_ = final_loss;
  if (style_.quiet) return;
  if (style_.tty) print(true);
}

}  // namespace kg::train
