// JPEG reduced decoding (Pipeline::process_encoded): the header parser, the same random_resized_crop
// windows as a full decode, pixels close to the full decode's, and the cases that must decode in full.
#include <catch2/catch.hpp>

#include <cmath>
#include <string>
#include <vector>

#include <opencv2/core.hpp>
#include <opencv2/imgproc.hpp>

#include "core/random.h"
#include "data/image_io.h"
#include "data/jpeg_header.h"
#include "data/transform.h"
#include "support/encode.h"

namespace {
namespace KG_UNITY_ID {  // each test file's own names in a unity batch (CMakeLists.txt)

using kg::config::json;

namespace {

// A smooth photo-like 8-bit BGR image (gradients and blobs: what JPEG and DCT scaling are made for).
cv::Mat photo(int h, int w) {
  cv::Mat m(h, w, CV_8UC3);
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x) {
      auto* p = m.ptr<uint8_t>(y) + 3 * x;
      p[0] = static_cast<uint8_t>(127 + 100 * std::sin(x * 0.013) * std::cos(y * 0.021));
      p[1] = static_cast<uint8_t>(255.0 * x / w);
      p[2] = static_cast<uint8_t>(255.0 * y / h);
    }
  return m;
}

std::string jpeg(const cv::Mat& m) {
  kg::test::JpegOptions o;
  o.quality = 92;
  return kg::test::encode_jpeg(m, o);
}

// The bytes with an APP1 Exif segment (orientation 1) inserted after SOI.
std::string with_exif(const std::string& j) {
  const std::string tiff("MM\0\x2a\0\0\0\x08\0\x01\x01\x12\0\x03\0\0\0\x01\0\x01\0\0\0\0\0\0", 26);
  const std::string body = std::string("Exif\0\0", 6) + tiff;
  const size_t len = body.size() + 2;
  std::string seg = "\xFF\xE1";
  seg += static_cast<char>(len >> 8);
  seg += static_cast<char>(len & 0xFF);
  return j.substr(0, 2) + seg + body + j.substr(2);
}

const char* kAugment = R"([{"name": "random_resized_crop", "scale": [0.08, 1.0]}, {"name": "hflip"},
                             {"name": "normalize", "preset": "imagenet"}])";

std::vector<float> run(const kg::data::Pipeline& p, const std::string& bytes, uint64_t seed, bool encoded) {
  const auto& g = p.geometry();
  std::vector<float> out(static_cast<size_t>(g.channels * g.height * g.width));
  kg::Rng rng(seed);
  if (encoded)
    p.process_encoded(bytes, "photo.jpg", 3, kg::data::kDefaultMaxImagePixels, rng, out.data());
  else
    p.process(kg::data::decode_image_bytes(bytes, "photo.jpg", 3), rng, out.data());
  return out;
}

double mean_abs_diff(const std::vector<float>& a, const std::vector<float>& b) {
  double s = 0;
  for (size_t i = 0; i < a.size(); ++i) s += std::abs(a[i] - b[i]);
  return s / static_cast<double>(a.size());
}

}  // namespace

TEST_CASE("jpeg_info reads the frame header and notices EXIF", "[unit][data]") {
  const std::string j = jpeg(photo(480, 640));
  auto info = kg::data::jpeg_info(j);
  REQUIRE(info);
  CHECK(info->width == 640);
  CHECK(info->height == 480);
  CHECK(info->components == 3);
  CHECK_FALSE(info->exif);
  auto e = kg::data::jpeg_info(with_exif(j));
  REQUIRE(e);
  CHECK(e->exif);
  CHECK(e->width == 640);
  CHECK_FALSE(kg::data::jpeg_info(kg::test::encode_png(photo(8, 8))));
  CHECK_FALSE(kg::data::jpeg_info(j.substr(0, 20)));  // cut before the frame header
  CHECK_FALSE(kg::data::jpeg_info(""));
}

TEST_CASE("reduced decoding: the same crops as a full decode, decoded at 1/2..1/8", "[unit][data]") {
  const kg::data::ImageGeometry g{32, 32, 3};
  const kg::data::Pipeline reduced(json::parse(kAugment), g, true, false, true);
  const kg::data::Pipeline full(json::parse(kAugment), g, true, false, false);
  REQUIRE(reduced.decodes_reduced());
  REQUIRE_FALSE(full.decodes_reduced());
  const std::string j = jpeg(photo(600, 800));
  double worst = 0, total = 0;
  int differing = 0;
  for (uint64_t seed = 1; seed <= 40; ++seed) {
    const auto ref = run(full, j, seed, false);
    // data.reduced_decode = false: process_encoded is exactly a full decode + process.
    CHECK(run(full, j, seed, true) == ref);
    const auto r = run(reduced, j, seed, true);
    const double d = mean_abs_diff(r, ref);
    worst = std::max(worst, d);
    total += d;
    differing += d > 0;
  }
  // 32 px crops of an 800x600 photo decode at 1/2..1/8: other pixels (so the path ran), the same picture.
  // Normalized units: 0.05 is about 3 levels of 255 after imagenet's std.
  CHECK(differing > 30);
  CHECK(total / 40 < 0.05);
  CHECK(worst < 0.15);

  SECTION("EXIF, PNG and a crop smaller than 2x the output decode in full: identical to process()") {
    const std::string e = with_exif(j);
    for (uint64_t seed = 1; seed <= 5; ++seed) CHECK(run(reduced, e, seed, true) == run(full, e, seed, false));
    const std::string p = kg::test::encode_png(photo(64, 64));
    for (uint64_t seed = 1; seed <= 5; ++seed) CHECK(run(reduced, p, seed, true) == run(full, p, seed, false));
    const std::string small = jpeg(photo(40, 40));  // every window < 64 px: factor 1
    for (uint64_t seed = 1; seed <= 5; ++seed) CHECK(run(reduced, small, seed, true) == run(full, small, seed, false));
  }
}

}  // namespace KG_UNITY_ID
}  // namespace
