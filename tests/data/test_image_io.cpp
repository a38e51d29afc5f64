#include <zlib.h>

#include <catch2/catch.hpp>
#include <opencv2/imgcodecs.hpp>

#include "core/error.h"
#include "core/fs.h"
#include "data/image_io.h"
#include "support/temp_dir.h"

using kg::data::decode_image;

namespace {
bool same(const cv::Mat& a, const cv::Mat& b) {
  return a.size() == b.size() && a.type() == b.type() && cv::norm(a, b, cv::NORM_INF) == 0;
}

void put_chunk(std::string& png, const char* type, const std::string& data) {
  auto be = [&](uint32_t v) {
    for (int s = 24; s >= 0; s -= 8) png += static_cast<char>((v >> s) & 255);
  };
  be(static_cast<uint32_t>(data.size()));
  std::string body = std::string(type, 4) + data;
  png += body;
  be(static_cast<uint32_t>(crc32(0, reinterpret_cast<const Bytef*>(body.data()), body.size())));
}

// A gray+alpha PNG (color type 4), which OpenCV cannot write.
std::string gray_alpha_png(int w, int h, const std::vector<uint8_t>& gray_alpha) {
  std::string png = "\x89PNG\r\n\x1a\n";
  std::string ihdr;
  for (uint32_t v : {uint32_t(w), uint32_t(h)})
    for (int s = 24; s >= 0; s -= 8) ihdr += static_cast<char>((v >> s) & 255);
  ihdr += std::string("\x08\x04\x00\x00\x00", 5);
  put_chunk(png, "IHDR", ihdr);
  std::string raw;
  for (int y = 0; y < h; ++y) {
    raw += '\0';  // filter: none
    raw.append(reinterpret_cast<const char*>(gray_alpha.data()) + y * w * 2, w * 2);
  }
  uLongf n = compressBound(raw.size());
  std::string z(n, '\0');
  REQUIRE(compress(reinterpret_cast<Bytef*>(z.data()), &n, reinterpret_cast<const Bytef*>(raw.data()), raw.size()) ==
          Z_OK);
  z.resize(n);
  put_chunk(png, "IDAT", z);
  put_chunk(png, "IEND", "");
  return png;
}

// A JPEG whose EXIF says "rotate 90 degrees clockwise to display" (orientation 6).
std::vector<uchar> rotated_jpeg(const cv::Mat& bgr) {
  std::vector<uchar> jpg;
  REQUIRE(cv::imencode(".jpg", bgr, jpg));
  std::vector<uchar> app1 = {0xFF, 0xE1, 0,    0,    'E', 'x', 'i', 'f', 0, 0,              // APP1 Exif
                             'M',  'M',  0,    0x2a, 0,   0,   0,   8,                      // TIFF header
                             0,    1,    0x01, 0x12, 0,   3,   0,   0,   0, 1, 0, 6, 0, 0,  // Orientation = 6
                             0,    0,    0,    0};
  app1[3] = static_cast<uchar>(app1.size() - 2);
  std::vector<uchar> out(jpg.begin(), jpg.begin() + 2);  // SOI
  out.insert(out.end(), app1.begin(), app1.end());
  out.insert(out.end(), jpg.begin() + 2, jpg.end());
  return out;
}
}  // namespace

TEST_CASE("decode_image: 8-bit gray PNG, both channel counts", "[unit]") {
  kg::test::TempDir d;
  cv::Mat g(5, 7, CV_8UC1);
  for (int i = 0; i < g.rows * g.cols; ++i) g.data[i] = static_cast<uchar>(i * 7);
  REQUIRE(cv::imwrite(d / "g.png", g));
  cv::Mat one = decode_image(d / "g.png", 1);
  CHECK(same(one, g));
  cv::Mat three = decode_image(d / "g.png", 3);
  REQUIRE(three.type() == CV_8UC3);
  CHECK(three.at<cv::Vec3b>(2, 3) == cv::Vec3b(g.at<uchar>(2, 3), g.at<uchar>(2, 3), g.at<uchar>(2, 3)));
}

TEST_CASE("decode_image: color comes back in RGB order", "[unit]") {
  kg::test::TempDir d;
  cv::Mat bgr(3, 4, CV_8UC3, cv::Scalar(10, 20, 30));  // B=10 G=20 R=30
  bgr.at<cv::Vec3b>(1, 2) = cv::Vec3b(200, 100, 50);
  REQUIRE(cv::imwrite(d / "c.png", bgr));
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
  cv::Mat bgra(2, 2, CV_8UC4, cv::Scalar(10, 20, 30, 0));
  REQUIRE(cv::imwrite(d / "a.png", bgra));
  cv::Mat rgb = decode_image(d / "a.png", 3);
  REQUIRE(rgb.type() == CV_8UC3);
  CHECK(rgb.at<cv::Vec3b>(1, 1) == cv::Vec3b(30, 20, 10));

  kg::write_file_atomic(d / "ga.png", gray_alpha_png(2, 1, {90, 255, 140, 0}));
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
  REQUIRE(cv::imwrite(d / "g16.png", g16));
  cv::Mat g = decode_image(d / "g16.png", 1);
  REQUIRE(g.type() == CV_8UC1);
  CHECK(g.at<uchar>(0, 0) == 0);
  CHECK(g.at<uchar>(0, 1) == 1);
  CHECK(g.at<uchar>(0, 2) == 128);
  CHECK(g.at<uchar>(0, 3) == 255);

  cv::Mat c16(1, 1, CV_16UC3, cv::Scalar(257 * 3, 257 * 2, 257 * 1));  // BGR
  REQUIRE(cv::imwrite(d / "c16.png", c16));
  cv::Mat c = decode_image(d / "c16.png", 3);
  REQUIRE(c.type() == CV_8UC3);
  CHECK(c.at<cv::Vec3b>(0, 0) == cv::Vec3b(1, 2, 3));
}

TEST_CASE("decode_image: EXIF orientation is applied", "[unit]") {
  kg::test::TempDir d;
  cv::Mat bgr(8, 16, CV_8UC3, cv::Scalar(0, 0, 0));  // 16 wide, 8 high; left half white
  bgr(cv::Rect(0, 0, 8, 8)).setTo(cv::Scalar(255, 255, 255));
  std::vector<uchar> jpg = rotated_jpeg(bgr);
  kg::write_file_atomic(d / "r.jpg", std::string(jpg.begin(), jpg.end()));
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
                    "cannot decode image " + (d / "junk2.png") + ": not a supported image or damaged");
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
  CHECK(same(decode_image(d / "sub/x.png", 3), rgb));
  cv::Mat bgr = cv::imread(d / "sub/x.png", cv::IMREAD_COLOR);
  CHECK(bgr.at<cv::Vec3b>(0, 0) ==
        cv::Vec3b(rgb.at<cv::Vec3b>(0, 0)[2], rgb.at<cv::Vec3b>(0, 0)[1], rgb.at<cv::Vec3b>(0, 0)[0]));
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

TEST_CASE("encode_png_zlib (the encoder of builds without imgcodecs) gives PNGs OpenCV decodes exactly", "[unit]") {
  cv::RNG rng(7);
  for (int channels : {1, 3}) {
    for (auto [h, w] : {std::pair{1, 1}, {5, 7}, {31, 64}}) {
      INFO("channels " << channels << ", " << h << "x" << w);
      cv::Mat img(h, w, channels == 3 ? CV_8UC3 : CV_8UC1);
      rng.fill(img, cv::RNG::UNIFORM, 0, 256);
      std::string a, b;
      kg::data::encode_png_zlib(img, a);
      kg::data::encode_png_zlib(img.clone(), b);
      CHECK(a == b);  // deterministic
      REQUIRE(a.compare(0, 8, "\x89PNG\r\n\x1a\n") == 0);
      CHECK(same(kg::data::decode_image_bytes(a, "mem", channels), img));  // RGB order kept
      const cv::Mat raw(1, static_cast<int>(a.size()), CV_8UC1, a.data());
      cv::Mat bgr = cv::imdecode(raw, cv::IMREAD_UNCHANGED);
      REQUIRE(bgr.channels() == channels);
      if (channels == 3) CHECK(bgr.at<cv::Vec3b>(0, 0)[0] == img.at<cv::Vec3b>(0, 0)[2]);
    }
  }
  // A chart-like image (flat areas) compresses well below the raw size.
  cv::Mat flat(100, 100, CV_8UC3, cv::Scalar(255, 255, 255));
  std::string png;
  kg::data::encode_png_zlib(flat, png);
  CHECK(png.size() < 1000);
  CHECK_THROWS_AS(kg::data::encode_png_zlib(cv::Mat(2, 2, CV_16UC1), png), kg::InternalError);
}
