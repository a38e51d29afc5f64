#include "train/progress.h"

#include <algorithm>
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

bool in_notebook(const std::map<std::string, std::string>& environ) {
  // Kaggle and Colab name themselves; a Jupyter kernel's children inherit JPY_PARENT_PID (jupyter_client) and
  // ipykernel's inline matplotlib backend.
  for (const char* name : {"KAGGLE_KERNEL_RUN_TYPE", "COLAB_RELEASE_TAG", "COLAB_GPU", "JPY_PARENT_PID"})
    if (environ.count(name)) return true;
  const auto mpl = environ.find("MPLBACKEND");
  return mpl != environ.end() && mpl->second.find("inline") != std::string::npos;
}

Progress::Progress(ProgressStyle style, std::string label, int64_t total)
    : style_(style), label_(std::move(label)), total_(total), start_(std::chrono::steady_clock::now()), last_(start_) {}

bool Progress::due() {
  if (style_.quiet) return false;
  auto now = std::chrono::steady_clock::now();
  double since = std::chrono::duration<double>(now - last_).count();
  if (style_.tty ? since < kRedrawEveryS : since < style_.line_every_s) return false;
  last_ = now;
  return true;
}

void Progress::print(bool final) {
  std::FILE* out = style_.out ? style_.out : stderr;
  double el = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  double ips = el > 0 ? images_ / el : 0;
  double eta = done_ > 0 ? el * static_cast<double>(total_ - done_) / static_cast<double>(done_) : 0;
  char buf[256];
  if (style_.tty) {
    // Plain text and one \r, no cursor movement; narrower than the terminal, since a wrapped line cannot be
    // redrawn in place (the bar shrinks first, then the tail is cut).
    std::snprintf(buf, sizeof buf, " %lld/%lld loss %.4f lr %.2e %.0f img/s %s %s", static_cast<long long>(done_),
                  static_cast<long long>(total_), loss_, lr_, ips, final ? "in" : "eta",
                  clock_text(final ? el : eta).c_str());
    const std::string tail = buf;
    const size_t width =
        static_cast<size_t>(style_.columns > 1 && style_.columns < kMaxColumns ? style_.columns : kMaxColumns) - 1;
    const size_t fixed = label_.size() + 3 + tail.size();  // "label [" + bar + "]" + tail
    const size_t bar_width = fixed < width ? std::min<size_t>(24, width - fixed) : 0;
    std::string line = label_;
    if (bar_width >= 4) {
      size_t fill = total_ > 0 ? static_cast<size_t>(static_cast<double>(bar_width) * static_cast<double>(done_) /
                                                     static_cast<double>(total_))
                               : bar_width;
      std::string bar(std::min(fill, bar_width), '#');
      bar.resize(bar_width, '.');
      line += " [" + bar + "]";
    }
    line += tail;
    if (line.size() > width) line.resize(width);
    const size_t length = line.size();
    if (length < shown_) line.append(shown_ - length, ' ');
    shown_ = length;
    std::fputs(("\r" + line).c_str(), out);
    if (final) std::fputs("\n", out);
  } else {
    std::snprintf(buf, sizeof buf, "%s step %lld/%lld loss %.4f lr %.3e %.0f img/s %s %s\n", label_.c_str(),
                  static_cast<long long>(done_), static_cast<long long>(total_), loss_, lr_, ips,
                  final ? "took" : "eta", clock_text(final ? el : eta).c_str());
    std::fputs(buf, out);
  }
  std::fflush(out);
}

void Progress::finish(double final_loss) {
  loss_ = final_loss;
  if (style_.quiet) return;
  if (style_.tty) print(true);
}

}  // namespace kg::train
