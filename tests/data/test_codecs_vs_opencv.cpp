// kgtrain's decoders (lib/data/codecs) against OpenCV's imdecode, the decoder kgtrain used before it stopped linking
// imgcodecs: the same pixels, exactly, for each format and layout kgtrain decodes. Built where imgcodecs is installed
// (KG_TEST_IMGCODECS: linked into the tests only, never into kgtrain).
#include "test_paths.h"  // KG_TEST_IMGCODECS
#if KG_TEST_IMGCODECS
#include <catch2/catch.hpp>

#include <cmath>
#include <string>
#include <vector>

#include <opencv2/core.hpp>
#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>

#include "data/image_io.h"
#include "support/encode.h"

namespace {

// What decode_image_bytes did with imdecode (the code this suite replaced), as the reference.
cv::Mat opencv_decode(const std::string& bytes, int channels, int reduce) {
  const cv::Mat buf(1, static_cast<int>(bytes.size()), CV_8UC1, const_cast<char*>(bytes.data()));
  const int reduced = reduce == 2 ? cv::IMREAD_REDUCED_COLOR_2 : reduce == 4 ? cv::IMREAD_REDUCED_COLOR_4
                                                                             : cv::IMREAD_REDUCED_COLOR_8;
  cv::Mat m = cv::imdecode(buf, reduce == 1 ? cv::IMREAD_ANYDEPTH | cv::IMREAD_ANYCOLOR : reduced);
  REQUIRE_FALSE(m.empty());
  if (m.depth() == CV_16U) m.convertTo(m, CV_8U, 1.0 / 257.0);
  if (m.channels() == 4) cv::cvtColor(m, m, cv::COLOR_BGRA2BGR);
  if (m.channels() == 2) cv::extractChannel(m, m, 0);
  cv::Mat out;
  if (channels == 3)
    cv::cvtColor(m, out, m.channels() == 1 ? cv::COLOR_GRAY2RGB : cv::COLOR_BGR2RGB);
  else if (m.channels() == 3)
    cv::cvtColor(m, out, cv::COLOR_BGR2GRAY);
  else
    out = m;
  return out;
}

// Largest difference between our decode and OpenCV's, both channel counts; -1 when the sizes differ.
int worst_difference(const std::string& bytes, int reduce = 1) {
  int worst = 0;
  for (int channels : {1, 3}) {
    const cv::Mat ours = kg::data::decode_image_bytes(bytes, "fixture", channels, reduce);
    const cv::Mat ref = opencv_decode(bytes, channels, reduce);
    if (ours.size() != ref.size() || ours.type() != ref.type()) return -1;
    worst = std::max(worst, static_cast<int>(cv::norm(ours, ref, cv::NORM_INF)));
  }
  return worst;
}

// Photo-like pixels at an odd size (so MCU and row padding matter): gradients, a ripple, hard edges.
cv::Mat photo(int h, int w, int channels, int depth = CV_8U) {
  cv::Mat m(h, w, CV_MAKETYPE(depth, channels));
  const double top = depth == CV_16U ? 65535 : 255;
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x)
      for (int c = 0; c < channels; ++c) {
        const bool block = ((x / 9) + (y / 7) + c) % 2 == 0;
        double v = c == 0 ? 0.5 + 0.45 * std::sin(x * 0.21 + c) * std::cos(y * 0.17)
                          : block ? static_cast<double>(x) / w : 0.15 + 0.7 * y / h;
        if (c == 3) v = (x + y) % 5 == 0 ? 0 : 0.6;  // alpha: must be dropped, not composited
        const double s = std::round(v * top);
        if (depth == CV_16U)
          m.ptr<uint16_t>(y)[x * channels + c] = static_cast<uint16_t>(s);
        else
          m.ptr<uint8_t>(y)[x * channels + c] = static_cast<uint8_t>(s);
      }
  return m;
}

}  // namespace

using kg::test::JpegOptions;

TEST_CASE("codecs vs imdecode: JPEG (subsampling, gray, progressive, EXIF, reduced, CMYK)", "[unit][data][codecs]") {
  const cv::Mat rgb = photo(53, 75, 3), gray = photo(53, 75, 1);
  for (int sampling : {420, 422, 444}) {
    INFO("sampling " << sampling);
    JpegOptions o;
    o.sampling = sampling;
    CHECK(worst_difference(kg::test::encode_jpeg(rgb, o)) == 0);
    o.progressive = true;
    CHECK(worst_difference(kg::test::encode_jpeg(rgb, o)) == 0);
  }
  const std::string color = kg::test::encode_jpeg(rgb), mono = kg::test::encode_jpeg(gray);
  CHECK(worst_difference(mono) == 0);
  for (int orientation = 1; orientation <= 8; ++orientation) {
    INFO("EXIF orientation " << orientation);
    CHECK(worst_difference(kg::test::with_exif_orientation(color, orientation)) == 0);
    CHECK(worst_difference(kg::test::with_exif_orientation(mono, orientation)) == 0);
  }
  for (int reduce : {2, 4, 8}) {
    INFO("reduce " << reduce);
    CHECK(worst_difference(color, reduce) == 0);
    CHECK(worst_difference(mono, reduce) == 0);
    CHECK(worst_difference(kg::test::with_exif_orientation(color, 6), reduce) == 0);
  }
  const cv::Mat cmyk = photo(21, 34, 4);
  for (bool ycck : {false, true}) {
    INFO("ycck " << ycck);
    JpegOptions o;
    o.cmyk = true;
    o.ycck = ycck;
    CHECK(worst_difference(kg::test::encode_jpeg(cmyk, o)) == 0);
  }
}

TEST_CASE("codecs vs imdecode: PNG (depths, alpha, palette, tRNS, interlace, eXIf)", "[unit][data][codecs]") {
  for (int depth : {CV_8U, CV_16U})
    for (int channels : {1, 2, 3, 4})
      for (bool interlace : {false, true}) {
        INFO("depth " << depth << ", channels " << channels << ", interlace " << interlace);
        CHECK(worst_difference(kg::test::encode_png(photo(19, 23, channels, depth), interlace)) == 0);
      }
  for (int orientation = 1; orientation <= 8; ++orientation) {
    INFO("eXIf orientation " << orientation);
    CHECK(worst_difference(kg::test::with_png_exif_orientation(kg::test::encode_png(photo(11, 14, 3)), orientation)) == 0);
  }
  cv::Mat indices(13, 17, CV_8UC1);
  for (int i = 0; i < indices.rows * indices.cols; ++i) indices.data[i] = static_cast<uint8_t>(i * 7 % 16);
  std::vector<uint8_t> palette, alpha;
  for (int i = 0; i < 16; ++i) {
    palette.insert(palette.end(), {static_cast<uint8_t>(i * 16), static_cast<uint8_t>(255 - i * 9),
                                   static_cast<uint8_t>(i * i)});
    alpha.push_back(static_cast<uint8_t>(i * 17));
  }
  CHECK(worst_difference(kg::test::encode_png_palette(indices, palette)) == 0);
  CHECK(worst_difference(kg::test::encode_png_palette(indices, palette, alpha, 4)) == 0);
  cv::Mat bits = indices & 1;
  CHECK(worst_difference(kg::test::encode_png_palette(bits, {0, 0, 0, 250, 200, 10}, {}, 1)) == 0);
  for (int bit_depth : {1, 2, 4}) {
    INFO("gray bit depth " << bit_depth);
    cv::Mat g = indices & ((1 << bit_depth) - 1);
    CHECK(worst_difference(kg::test::encode_png_gray(g, bit_depth)) == 0);
    CHECK(worst_difference(kg::test::encode_png_gray(g, bit_depth, 1)) == 0);
  }
}

TEST_CASE("codecs vs imdecode: WebP, TIFF, BMP, PNM", "[unit][data][codecs]") {
  const cv::Mat rgb = photo(29, 31, 3), rgba = photo(29, 31, 4), gray = photo(29, 31, 1);
  if (kg::data::image_formats().find("webp") != std::string::npos) {
    CHECK(worst_difference(kg::test::encode_webp(rgb, 80)) == 0);
    CHECK(worst_difference(kg::test::encode_webp(rgb, -1)) == 0);
    CHECK(worst_difference(kg::test::encode_webp(rgba, 80)) == 0);
    CHECK(worst_difference(kg::test::encode_webp(rgba, -1)) == 0);
  }
  if (kg::data::image_formats().find("tiff") != std::string::npos) {
    for (bool lzw : {false, true}) {
      INFO("lzw " << lzw);
      CHECK(worst_difference(kg::test::encode_tiff(rgb, lzw)) == 0);
      CHECK(worst_difference(kg::test::encode_tiff(gray, lzw)) == 0);
      CHECK(worst_difference(kg::test::encode_tiff(photo(9, 11, 1, CV_16U), lzw)) == 0);
      CHECK(worst_difference(kg::test::encode_tiff(photo(9, 11, 3, CV_16U), lzw)) == 0);
    }
  }
  CHECK(worst_difference(kg::test::encode_bmp(rgb)) == 0);
  CHECK(worst_difference(kg::test::encode_bmp(gray)) == 0);
  CHECK(worst_difference(kg::test::encode_bmp(rgba)) == 0);
  for (bool plain : {false, true}) {
    INFO("plain " << plain);
    CHECK(worst_difference(kg::test::encode_pnm(rgb, plain)) == 0);
    CHECK(worst_difference(kg::test::encode_pnm(gray, plain)) == 0);
    CHECK(worst_difference(kg::test::encode_pnm(photo(9, 11, 3, CV_16U), plain)) == 0);
    CHECK(worst_difference(kg::test::encode_pnm(photo(9, 11, 1, CV_16U), plain)) == 0);
  }
  CHECK(worst_difference(kg::test::encode_pnm(gray, false, true)) == 0);
  // OpenCV 4.6 got three PAM layouts wrong: RGB came back with red and blue swapped (its bytes went into a BGR Mat
  // as they were), gray+alpha and RGBA as garbage after the first pixel (its alpha-dropping conversion). Ours read them as the PAM spec says: the same
  // pixels as the P6 and P5 files that hold them, which OpenCV does decode right (above).
  const auto same_as = [](const std::string& a, const std::string& b) {
    for (int channels : {1, 3}) {
      const cv::Mat x = kg::data::decode_image_bytes(a, "a", channels), y = kg::data::decode_image_bytes(b, "b", channels);
      if (x.size() != y.size() || cv::norm(x, y, cv::NORM_INF) != 0) return false;
    }
    return true;
  };
  CHECK(same_as(kg::test::encode_pnm(rgb, false, true), kg::test::encode_pnm(rgb)));
  cv::Mat rgb_of_rgba;
  cv::cvtColor(rgba, rgb_of_rgba, cv::COLOR_RGBA2RGB);
  CHECK(same_as(kg::test::encode_pnm(rgba, false, true), kg::test::encode_pnm(rgb_of_rgba)));
  cv::Mat gray_alpha = photo(9, 11, 2), just_gray;
  cv::extractChannel(gray_alpha, just_gray, 0);
  CHECK(same_as(kg::test::encode_pnm(gray_alpha, false, true), kg::test::encode_pnm(just_gray)));
}

TEST_CASE("codecs vs imencode: encode_png writes the bytes OpenCV's PNG encoder wrote (charts, packs)",
          "[unit][data][codecs]") {
  for (int channels : {1, 3}) {
    const cv::Mat rgb = photo(37, 41, channels);
    cv::Mat stored = rgb.clone();
    if (channels == 3) cv::cvtColor(rgb, stored, cv::COLOR_RGB2BGR);
    std::vector<uint8_t> theirs;
    REQUIRE(cv::imencode(".png", stored, theirs, {cv::IMWRITE_PNG_COMPRESSION, 1}));
    std::string ours;
    kg::data::encode_png(rgb, ours);
    INFO("channels " << channels << ": " << ours.size() << " vs " << theirs.size() << " bytes");
    CHECK(ours == std::string(theirs.begin(), theirs.end()));
  }
}

#endif  // KG_TEST_IMGCODECS

namespace {
namespace KG_UNITY_ID {  // each test file's own names in a unity batch (CMakeLists.txt)

}  // namespace KG_UNITY_ID
}  // namespace
