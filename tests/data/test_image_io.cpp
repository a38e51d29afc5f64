#include <catch2/catch.hpp>

#include "core/error.h"
#include "core/fs.h"
#include "data/image_io.h"
#include "support/encode.h"
#include "support/temp_dir.h"

namespace {
namespace KG_UNITY_ID {  // each test file's own names in a unity batch (CMakeLists.txt)

using kg::data::decode_image;

namespace {
bool same(const cv::Mat& a, const cv::Mat& b) {
  return a.size() == b.size() && a.type() == b.type() && cv::norm(a, b, cv::NORM_INF) == 0;
}

void write_png(const std::string& path, const cv::Mat& pixels) { kg::write_file_atomic(path, kg::test::encode_png(pixels)); }
}  // namespace

TEST_CASE("decode_image: 8-bit gray PNG, both channel counts", "[unit]") {
  kg::test::TempDir d;
  cv::Mat g(5, 7, CV_8UC1);
  for (int i = 0; i < g.rows * g.cols; ++i) g.data[i] = static_cast<uchar>(i * 7);
  write_png(d / "g.png", g);
  cv::Mat one = decode_image(d / "g.png", 1);
  CHECK(same(one, g));
  cv::Mat three = decode_image(d / "g.png", 3);
  REQUIRE(three.type() == CV_8UC3);
  CHECK(three.at<cv::Vec3b>(2, 3) == cv::Vec3b(g.at<uchar>(2, 3), g.at<uchar>(2, 3), g.at<uchar>(2, 3)));
}

TEST_CASE("decode_image: color comes back in RGB order", "[unit]") {
  kg::test::TempDir d;
  cv::Mat stored(3, 4, CV_8UC3, cv::Scalar(30, 20, 10));  // the file's order: R=30 G=20 B=10
  stored.at<cv::Vec3b>(1, 2) = cv::Vec3b(50, 100, 200);
  write_png(d / "c.png", stored);
  cv::Mat rgb = decode_image(d / "c.png", 3);
  REQUIRE(rgb.type() == CV_8UC3);
  CHECK(rgb.at<cv::Vec3b>(0, 0) == cv::Vec3b(30, 20, 10));
  CHECK(rgb.at<cv::Vec3b>(1, 2) == cv::Vec3b(50, 100, 200));
  cv::Mat gray = decode_image(d / "c.png", 1);
  REQUIRE(gray.type() == CV_8UC1);
  CHECK(gray.at<uchar>(0, 0) == 22);  // 0.299*30 + 0.587*20 + 0.114*10 = 21.85
  CHECK(gray.at<uchar>(1, 2) == 96);  // 0.299*50 + 0.587*100 + 0.114*200 = 96.45
}

TEST_CASE("decode_image: alpha is dropped", "[unit]") {
  kg::test::TempDir d;
  write_png(d / "a.png", cv::Mat(2, 2, CV_8UC4, cv::Scalar(30, 20, 10, 0)));  // RGBA, fully transparent
  cv::Mat rgb = decode_image(d / "a.png", 3);
  REQUIRE(rgb.type() == CV_8UC3);
  CHECK(rgb.at<cv::Vec3b>(1, 1) == cv::Vec3b(30, 20, 10));

  cv::Mat gray_alpha(1, 2, CV_8UC2);
  gray_alpha.at<cv::Vec2b>(0, 0) = cv::Vec2b(90, 255);
  gray_alpha.at<cv::Vec2b>(0, 1) = cv::Vec2b(140, 0);
  write_png(d / "ga.png", gray_alpha);
  cv::Mat g = decode_image(d / "ga.png", 1);
  REQUIRE(g.type() == CV_8UC1);
  CHECK(g.at<uchar>(0, 0) == 90);
  CHECK(g.at<uchar>(0, 1) == 140);
  CHECK(decode_image(d / "ga.png", 3).at<cv::Vec3b>(0, 1) == cv::Vec3b(140, 140, 140));
}

TEST_CASE("decode_image: 16-bit samples scale to 8-bit", "[unit]") {
  kg::test::TempDir d;
  cv::Mat g16(1, 4, CV_16UC1);
  g16.at<uint16_t>(0, 0) = 0;
  g16.at<uint16_t>(0, 1) = 257;
  g16.at<uint16_t>(0, 2) = 128 * 257;
  g16.at<uint16_t>(0, 3) = 65535;
  write_png(d / "g16.png", g16);
  cv::Mat g = decode_image(d / "g16.png", 1);
  REQUIRE(g.type() == CV_8UC1);
  CHECK(g.at<uchar>(0, 0) == 0);
  CHECK(g.at<uchar>(0, 1) == 1);
  CHECK(g.at<uchar>(0, 2) == 128);
  CHECK(g.at<uchar>(0, 3) == 255);

  write_png(d / "c16.png", cv::Mat(1, 1, CV_16UC3, cv::Scalar(257 * 1, 257 * 2, 257 * 3)));  // RGB
  cv::Mat c = decode_image(d / "c16.png", 3);
  REQUIRE(c.type() == CV_8UC3);
  CHECK(c.at<cv::Vec3b>(0, 0) == cv::Vec3b(1, 2, 3));
}

TEST_CASE("decode_image: EXIF orientation is applied", "[unit]") {
  kg::test::TempDir d;
  cv::Mat rgb_in(8, 16, CV_8UC3, cv::Scalar(0, 0, 0));  // 16 wide, 8 high; left half white
  rgb_in(cv::Rect(0, 0, 8, 8)).setTo(cv::Scalar(255, 255, 255));
  // EXIF orientation 6: "rotate 90 degrees clockwise to display".
  kg::write_file_atomic(d / "r.jpg", kg::test::with_exif_orientation(kg::test::encode_jpeg(rgb_in), 6));
  cv::Mat rgb = decode_image(d / "r.jpg", 3);
  // Rotated clockwise: 8 wide, 16 high, the white half now on top.
  REQUIRE(rgb.cols == 8);
  REQUIRE(rgb.rows == 16);
  CHECK(rgb.at<cv::Vec3b>(2, 4)[0] > 200);
  CHECK(rgb.at<cv::Vec3b>(13, 4)[0] < 50);
  cv::Mat g = decode_image(d / "r.jpg", 1);
  CHECK(g.size() == cv::Size(8, 16));
}

TEST_CASE("decode_image: missing, empty and damaged files are DataErrors", "[unit]") {
  kg::test::TempDir d;
  CHECK_THROWS_WITH(decode_image(d / "none.png", 3), Catch::Contains("none.png") && Catch::Contains("No such file"));
  kg::write_file_atomic(d / "empty.png", "");
  CHECK_THROWS_WITH(decode_image(d / "empty.png", 3), "image " + (d / "empty.png") + " is empty (0 bytes)");
  kg::write_file_atomic(d / "junk.png", "this is not an image at all");
  CHECK_THROWS_WITH(decode_image(d / "junk.png", 1), Catch::StartsWith("cannot decode image " + (d / "junk.png") +
                                                                       ": not PNG, JPEG, BMP, WebP, TIFF or PNM"));
  // A known signature over damaged bytes reaches the decoder, which says so.
  kg::write_file_atomic(d / "junk2.png", "\x89PNG\r\n\x1a\n and then nothing an image needs");
  CHECK_THROWS_WITH(decode_image(d / "junk2.png", 1),
                    Catch::StartsWith("cannot decode image " + (d / "junk2.png") +
                                      ": not a supported image or damaged (libpng: "));
  std::string png;
  kg::data::encode_png(cv::Mat(64, 64, CV_8UC3, cv::Scalar(1, 2, 3)), png);
  kg::write_file_atomic(d / "cut.png", png.substr(0, png.size() / 2));
  CHECK_THROWS_AS(decode_image(d / "cut.png", 3), kg::DataError);
  try {
    decode_image(d / "junk.png", 3);
  } catch (const kg::Error& e) {
    CHECK(e.exit_code() == 3);
  }
}

TEST_CASE("encode_png / write_png_atomic store RGB correctly and deterministically", "[unit]") {
  kg::test::TempDir d;
  cv::Mat rgb(6, 5, CV_8UC3);
  for (int i = 0; i < rgb.rows * rgb.cols * 3; ++i) rgb.data[i] = static_cast<uchar>(i * 13 + 5);
  kg::data::write_png_atomic(d / "sub/x.png", rgb);
  CHECK(same(decode_image(d / "sub/x.png", 3), rgb));  // (the bytes OpenCV wrote: test_codecs_vs_opencv.cpp)
  std::string a, b;
  kg::data::encode_png(rgb, a);
  kg::data::encode_png(rgb.clone(), b);
  CHECK(a == b);
  CHECK(a == kg::read_file(d / "sub/x.png"));

  cv::Mat g(3, 9, CV_8UC1, cv::Scalar(77));
  kg::data::encode_png(g, a);
  CHECK(same(kg::data::decode_image_bytes(a, "mem", 1), g));
  CHECK_THROWS_AS(kg::data::encode_png(cv::Mat(2, 2, CV_16UC1), a), kg::InternalError);
}

}  // namespace KG_UNITY_ID
}  // namespace
