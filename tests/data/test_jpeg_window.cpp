// decode_jpeg_window (libjpeg-turbo: M/8 scaling, skipped rows, cropped columns): the pixels of a whole decode at the
// same scale, the whole-file 1/2 decode where M = 4, and nullopt (the caller's full-decode fallback) for what it must
// not take: damaged or truncated files, other formats.
#include <catch2/catch.hpp>

#include <cmath>
#include <string>
#include <vector>

#include <opencv2/core.hpp>
#include <opencv2/imgproc.hpp>

#include "data/image_io.h"
#include "data/jpeg_window.h"
#include "support/encode.h"
#include "support/gpu.h"  // KG_TEST_SKIPPED_MARKER

namespace {
namespace KG_UNITY_ID {  // each test file's own names in a unity batch (CMakeLists.txt)

using kg::data::Window;

namespace {

// Photo-like BGR: gradients, a ripple and hard edges (so chroma upsampling at a crop's border would show).
cv::Mat scene(int h, int w) {
  cv::Mat m(h, w, CV_8UC3);
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x) {
      auto* p = m.ptr<uint8_t>(y) + 3 * x;
      const bool block = ((x / 37) + (y / 29)) % 2 == 0;
      p[0] = static_cast<uint8_t>(127 + 100 * std::sin(x * 0.05) * std::cos(y * 0.031));
      p[1] = static_cast<uint8_t>(block ? 255.0 * x / w : 40);
      p[2] = static_cast<uint8_t>(block ? 200 : 255.0 * y / h);
    }
  return m;
}

std::string encode(const cv::Mat& m, const std::string& ext = ".jpg") {
  return ext == ".png" ? kg::test::encode_png(m) : kg::test::encode_jpeg(m);  // quality 90, 4:2:0
}

int max_abs_diff(const cv::Mat& a, const cv::Mat& b) {
  REQUIRE(a.size() == b.size());
  REQUIRE(a.type() == b.type());
  cv::Mat d;
  cv::absdiff(a, b, d);
  double worst = 0;
  cv::minMaxLoc(d.reshape(1), nullptr, &worst);
  return static_cast<int>(worst);
}

}  // namespace

TEST_CASE("jpeg_scale_for picks the smallest M/8 that keeps the window at least the output", "[unit][data]") {
  CHECK(kg::data::jpeg_scale_for({0, 0, 448, 448}, 224, 224) == 4);
  CHECK(kg::data::jpeg_scale_for({0, 0, 300, 300}, 224, 224) == 6);  // 300 * 6/8 = 225
  CHECK(kg::data::jpeg_scale_for({0, 0, 1792, 2000}, 224, 224) == 1);
  CHECK(kg::data::jpeg_scale_for({0, 0, 900, 250}, 224, 224) == 8);  // the short side decides
  CHECK(kg::data::jpeg_scale_for({0, 0, 100, 100}, 224, 224) == 8);  // smaller than the output: full scale
}

TEST_CASE("decode_jpeg_window: a window of the scaled decode", "[unit][data]") {
  if (!kg::data::can_decode_jpeg_windows()) {
    WARN(KG_TEST_SKIPPED_MARKER ": this build has no libjpeg-turbo headers (KG_WITH_LIBJPEG = 0)");
    return;
  }
  const std::string j = encode(scene(600, 800));

  SECTION("the whole image at 4/8 is OpenCV's 1/2 decode") {
    auto whole = kg::data::decode_jpeg_window(j, 3, {0, 0, 800, 600}, 4);
    REQUIRE(whole);
    CHECK(whole->x == 0);
    CHECK(whole->y == 0);
    CHECK(whole->sx == 0.5);
    const cv::Mat ref = kg::data::decode_image_bytes(j, "scene.jpg", 3, 2);  // RGB
    CHECK(max_abs_diff(whole->img, ref) == 0);
  }
  SECTION("windows at every scale equal the same window cut from the whole scaled image") {
    const std::vector<Window> windows{{0, 0, 800, 600},   {5, 7, 300, 200}, {333, 251, 467, 349},
                                      {790, 590, 10, 10}, {16, 16, 64, 64}, {100, 0, 37, 600},
                                      {32, 48, 96, 112},  {15, 17, 33, 31}, {64, 0, 736, 16}};
    for (int m = 1; m <= 8; ++m) {
      auto whole = kg::data::decode_jpeg_window(j, 3, {0, 0, 800, 600}, m);
      REQUIRE(whole);
      CHECK(whole->img.cols == (800 * m + 7) / 8);
      CHECK(whole->img.rows == (600 * m + 7) / 8);
      for (const Window& w : windows) {
        INFO("scale " << m << "/8, window " << w.x << "," << w.y << " " << w.w << "x" << w.h);
        auto part = kg::data::decode_jpeg_window(j, 3, w, m);
        REQUIRE(part);
        const Window s = kg::data::scale_window(w, whole->sx, whole->sy, whole->img.cols, whole->img.rows);
        CHECK(part->x == s.x);
        CHECK(part->y == s.y);
        CHECK(max_abs_diff(part->img, whole->img(cv::Rect(s.x, s.y, s.w, s.h))) == 0);
      }
    }
  }
  SECTION("gray output from a colour JPEG, and a gray JPEG as RGB") {
    auto gray = kg::data::decode_jpeg_window(j, 1, {40, 40, 200, 100}, 8);
    REQUIRE(gray);
    CHECK(gray->img.channels() == 1);
    CHECK(gray->img.cols == 200);
    CHECK(gray->img.rows == 100);
    cv::Mat g;
    cv::cvtColor(scene(120, 160), g, cv::COLOR_BGR2GRAY);
    auto rgb = kg::data::decode_jpeg_window(encode(g), 3, {0, 0, 160, 120}, 8);
    REQUIRE(rgb);
    CHECK(rgb->img.channels() == 3);
    std::vector<cv::Mat> planes;
    cv::split(rgb->img, planes);
    CHECK(max_abs_diff(planes[0], planes[2]) == 0);
  }
}

TEST_CASE("decode_jpeg_window leaves damaged files and other formats to the full decoder", "[unit][data]") {
  const std::string j = encode(scene(240, 320));
  CHECK_FALSE(kg::data::decode_jpeg_window(j.substr(0, j.size() / 2), 3, {0, 0, 320, 240}, 8));  // truncated
  std::string corrupt = j;
  // Unexpected restart markers in the scan: libjpeg warns (and papers over them), so the window decoder declines.
  for (size_t i = j.size() / 3; i < j.size() / 3 + 64; i += 2) corrupt.replace(i, 2, "\xFF\xD3");
  CHECK_FALSE(kg::data::decode_jpeg_window(corrupt, 3, {0, 0, 320, 240}, 8));
  CHECK_FALSE(kg::data::decode_jpeg_window(encode(scene(32, 32), ".png"), 3, {0, 0, 32, 32}, 8));
  CHECK_FALSE(kg::data::decode_jpeg_window("", 3, {0, 0, 32, 32}, 8));
  CHECK_FALSE(kg::data::decode_jpeg_window(j, 3, {0, 0, 0, 10}, 8));  // an empty window
  CHECK_FALSE(kg::data::decode_jpeg_window(j, 3, {0, 0, 10, 10}, 9));
}

}  // namespace KG_UNITY_ID
}  // namespace
