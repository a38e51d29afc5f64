// The progress bar on a terminal: at most two redraws a second, one \r and no escape sequences per redraw,
// never wider than the terminal (or 100 columns); notebook kernels are recognised from their environment.
#include <catch2/catch.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include "train/progress.h"

namespace {
namespace KG_UNITY_ID {  // each test file's own names in a unity batch (CMakeLists.txt)

using kg::train::Progress;
using kg::train::ProgressStyle;

namespace {
// What a Progress wrote into a temporary file.
struct Captured {
  std::FILE* f = std::tmpfile();
  ~Captured() { std::fclose(f); }
  std::string text() const {
    std::fflush(f);
    std::rewind(f);
    std::string s;
    for (int c; (c = std::fgetc(f)) != EOF;) s += static_cast<char>(c);
    return s;
  }
};

// The redraws of a bar: the text after each \r, without the final newline.
std::vector<std::string> redraws(const std::string& s) {
  std::vector<std::string> out;
  size_t at = 0;
  while ((at = s.find('\r', at)) != std::string::npos) {
    size_t end = s.find_first_of("\r\n", at + 1);
    out.push_back(s.substr(at + 1, end == std::string::npos ? std::string::npos : end - at - 1));
    at += 1;
  }
  return out;
}
}  // namespace

TEST_CASE("progress bar: redraws throttled to kRedrawEveryS, plain text, within the width", "[unit][train]") {
  Captured cap;
  const int columns = GENERATE(0, 60, 300);
  ProgressStyle style{false, true, 10, columns, cap.f};
  Progress p(style, "fold 3 epoch 10/10", 1875);
  auto loss = [] { return 0.25; };
  for (int i = 1; i <= 2000; ++i) p.update(std::min(i, 1875), loss, 1e-3, i * 64);  // well under 0.5 s
  CHECK(redraws(cap.text()).empty());
  std::this_thread::sleep_for(std::chrono::milliseconds(550));
  p.update(1000, loss, 1e-3, 64000);
  p.update(1001, loss, 1e-3, 64064);
  p.finish(0.2);
  const std::string text = cap.text();
  const auto lines = redraws(text);
  REQUIRE(lines.size() == 2);  // one timed redraw, the final one
  CHECK(text.find('\x1b') == std::string::npos);
  CHECK(text.back() == '\n');
  const size_t width = columns > 1 && columns < 100 ? static_cast<size_t>(columns) - 1 : 99;
  for (auto& l : lines) CHECK(l.size() <= width);
  CHECK(lines[0].rfind("fold 3 epoch 10/10", 0) == 0);
  CHECK(lines[1].find("1001/1875") != std::string::npos);
}

TEST_CASE("progress bar: a label wider than the terminal is cut, never wrapped", "[unit][train]") {
  Captured cap;
  ProgressStyle style{false, true, 10, 40, cap.f};
  Progress p(style, std::string(70, 'x'), 10);
  p.finish(0.1);
  const auto lines = redraws(cap.text());
  REQUIRE(lines.size() == 1);
  CHECK(lines[0] == std::string(39, 'x'));
}

TEST_CASE("progress: plain lines where stderr is no terminal", "[unit][train]") {
  Captured cap;
  ProgressStyle style{false, false, 0.0, 0, cap.f};
  Progress p(style, "epoch 1/1", 3);
  for (int i = 1; i <= 3; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
    p.update(
        i, [] { return 0.5; }, 1e-3, i * 8);
  }
  p.finish(0.5);
  const std::string text = cap.text();
  CHECK(text.find('\r') == std::string::npos);
  CHECK(std::count(text.begin(), text.end(), '\n') == 3);
  CHECK(text.find("epoch 1/1 step 3/3 loss 0.5000") != std::string::npos);
}

TEST_CASE("in_notebook: Kaggle, Colab and Jupyter kernels, not a plain shell", "[unit][train]") {
  using kg::train::in_notebook;
  CHECK(in_notebook({{"KAGGLE_KERNEL_RUN_TYPE", "Interactive"}}));
  CHECK(in_notebook({{"COLAB_RELEASE_TAG", "release-colab_20261101"}}));
  CHECK(in_notebook({{"COLAB_GPU", "0"}}));
  CHECK(in_notebook({{"JPY_PARENT_PID", "41"}}));
  CHECK(in_notebook({{"MPLBACKEND", "module://matplotlib_inline.backend_inline"}}));
  CHECK_FALSE(in_notebook({{"MPLBACKEND", "Agg"}, {"TERM", "xterm-256color"}, {"COLUMNS", "80"}}));
  CHECK_FALSE(in_notebook({}));
}

}  // namespace KG_UNITY_ID
}  // namespace
