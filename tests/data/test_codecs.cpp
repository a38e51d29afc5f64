// The decoders of lib/data/codecs on their own (no OpenCV imgcodecs needed): every format round-trips its pixels,
// damaged and truncated files of each are a DataError naming the file, and the libraries print nothing to stderr.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <cstdio>
#include <string>

#include <opencv2/core.hpp>

#include "core/error.h"
#include "data/image_io.h"
#include "support/encode.h"
#include "support/images.h"

namespace {
namespace KG_UNITY_ID {  // each test file's own names in a unity batch (CMakeLists.txt)

namespace {

// What `f` writes to file descriptor 2 (libpng, libjpeg and libtiff write there by default).
template <class F>
std::string stderr_of(F&& f) {
  std::fflush(stderr);
  FILE* tmp = std::tmpfile();
  const int saved = dup(2);
  dup2(fileno(tmp), 2);
  try {
    f();
  } catch (...) {
  }
  std::fflush(stderr);
  dup2(saved, 2);
  close(saved);
  std::string out;
  std::rewind(tmp);
  for (int c; (c = std::fgetc(tmp)) != EOF;) out += static_cast<char>(c);
  std::fclose(tmp);
  return out;
}

std::string decode_error(const std::string& bytes) {
  try {
    kg::data::decode_image_bytes(bytes, "x.img", 3);
  } catch (const kg::DataError& e) {
    return e.what();
  }
  return "(decoded)";
}

bool has(const std::string& formats, const char* f) { return (" " + formats + " ").find(" " + std::string(f) + " ") != std::string::npos; }

}  // namespace

TEST_CASE("image_formats lists what this build decodes", "[unit][data][codecs]") {
  const std::string f = kg::data::image_formats();
  CHECK(f.rfind("jpeg png", 0) == 0);
  CHECK(has(f, "bmp"));
  CHECK(has(f, "pnm"));
  CHECK(kg::data::can_decode_images());
}

TEST_CASE("lossless formats round-trip their pixels exactly", "[unit][data][codecs]") {
  const cv::Mat rgb = kg::test::ramp(13, 17, 3), gray = kg::test::ramp(13, 17, 1);
  const auto same = [](const cv::Mat& a, const cv::Mat& b) { return a.size() == b.size() && cv::norm(a, b, cv::NORM_INF) == 0; };
  std::vector<std::pair<std::string, std::string>> files = {
      {"png", kg::test::encode_png(rgb)}, {"bmp", kg::test::encode_bmp(rgb)}, {"ppm", kg::test::encode_pnm(rgb)},
      {"plain ppm", kg::test::encode_pnm(rgb, true)}, {"pam", kg::test::encode_pnm(rgb, false, true)}};
  const std::string formats = kg::data::image_formats();
  if (has(formats, "webp")) files.emplace_back("webp", kg::test::encode_webp(rgb, -1));
  if (has(formats, "tiff")) files.emplace_back("tiff", kg::test::encode_tiff(rgb, true));
  for (const auto& [name, bytes] : files) {
    INFO(name);
    CHECK(same(kg::data::decode_image_bytes(bytes, name, 3), rgb));
  }
  CHECK(same(kg::data::decode_image_bytes(kg::test::encode_png(gray), "g", 1), gray));
  CHECK(same(kg::data::decode_image_bytes(kg::test::encode_bmp(gray), "g", 1), gray));
  CHECK(same(kg::data::decode_image_bytes(kg::test::encode_pnm(gray), "g", 1), gray));
}

TEST_CASE("damaged and truncated files of each format are DataErrors naming the file, silently", "[unit][data][codecs]") {
  const cv::Mat rgb = kg::test::ramp(40, 48, 3);
  std::vector<std::pair<std::string, std::string>> files = {
      {"jpeg", kg::test::encode_jpeg(rgb)},          {"progressive jpeg", kg::test::encode_jpeg(rgb, {90, 420, true})},
      {"png", kg::test::encode_png(rgb)},            {"interlaced png", kg::test::encode_png(rgb, true)},
      {"bmp", kg::test::encode_bmp(rgb)},            {"ppm", kg::test::encode_pnm(rgb)},
      {"plain ppm", kg::test::encode_pnm(rgb, true)}, {"pam", kg::test::encode_pnm(rgb, false, true)}};
  const std::string formats = kg::data::image_formats();
  if (has(formats, "webp")) {
    files.emplace_back("webp", kg::test::encode_webp(rgb, 80));
    files.emplace_back("lossless webp", kg::test::encode_webp(rgb, -1));
  }
  if (has(formats, "tiff")) files.emplace_back("tiff", kg::test::encode_tiff(rgb));
  for (const auto& [format, bytes] : files) {
    INFO(format);
    REQUIRE(decode_error(bytes) == "(decoded)");
    for (size_t keep : {bytes.size() / 2, bytes.size() - 40, size_t{30}}) {
      INFO("first " << keep << " bytes");
      std::string message;
      const std::string head = bytes.substr(0, keep);  // clang: a lambda cannot capture a structured binding
      const std::string printed = stderr_of([&] { message = decode_error(head); });
      CHECK_THAT(message, Catch::StartsWith("cannot decode image x.img: "));
      CHECK(printed.empty());
    }
  }
  // A JPEG with a damaged entropy-coded segment decodes, as it did with OpenCV (libjpeg papers over it), quietly.
  std::string jpeg = kg::test::encode_jpeg(rgb);
  for (size_t i = jpeg.size() / 2; i < jpeg.size() / 2 + 16; ++i) jpeg[i] = static_cast<char>(jpeg[i] ^ 0x55);
  std::string message;
  CHECK(stderr_of([&] { message = decode_error(jpeg); }).empty());
  CHECK(message == "(decoded)");
  // A PNG whose IDAT CRC is wrong: libpng's error, in our message.
  std::string png = kg::test::encode_png(rgb);
  png[png.size() - 13] = static_cast<char>(png[png.size() - 13] ^ 1);  // the IDAT chunk's CRC
  CHECK_THAT(decode_error(png), Catch::StartsWith("cannot decode image x.img: not a supported image or damaged (libpng: "));
}

TEST_CASE("a PNG's eXIf orientation is applied, as imdecode applied it", "[unit][data][codecs]") {
  const cv::Mat rgb = kg::test::ramp(3, 5, 3);  // 5 wide, 3 high
  const std::string png = kg::test::with_png_exif_orientation(kg::test::encode_png(rgb), 6);  // 90 degrees clockwise
  const cv::Mat up = kg::data::decode_image_bytes(png, "exif.png", 3);
  REQUIRE(up.cols == 3);
  REQUIRE(up.rows == 5);
  for (int y = 0; y < up.rows; ++y)
    for (int x = 0; x < up.cols; ++x) CHECK(up.at<cv::Vec3b>(y, x) == rgb.at<cv::Vec3b>(rgb.rows - 1 - x, y));
}

}  // namespace KG_UNITY_ID
}  // namespace
