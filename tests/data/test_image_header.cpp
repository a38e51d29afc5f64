// Image headers read before decoding (data/image_header.h): formats and sizes, the pixel limit, unknown formats.
#include <catch2/catch.hpp>
#include <opencv2/core.hpp>

#include "core/error.h"
#include "data/image_header.h"
#include "data/image_io.h"
#include "support/encode.h"

namespace {
namespace KG_UNITY_ID {  // each test file's own names in a unity batch (CMakeLists.txt)

using kg::data::ImageFormat;

namespace {

std::string encode(const std::string& ext, int channels, int w, int h) {
  cv::Mat m(h, w, channels == 1 ? CV_8UC1 : CV_8UC3, cv::Scalar::all(90));
  if (ext == ".png") return kg::test::encode_png(m);
  if (ext == ".jpg") return kg::test::encode_jpeg(m);
  if (ext == ".bmp") return kg::test::encode_bmp(m);
  if (ext == ".webp") return kg::test::encode_webp(m, -1);  // lossless: VP8L
  if (ext == ".webp-lossy") return kg::test::encode_webp(m, 80);
  if (ext == ".tiff") return kg::test::encode_tiff(m);
  return kg::test::encode_pnm(m, false, ext == ".pam");  // .ppm, .pgm (by channels), .pam
}

std::string decode_error(const std::string& bytes, int64_t max_pixels = kg::data::kDefaultMaxImagePixels) {
  try {
    kg::data::decode_image_bytes(bytes, "x.img", 3, 1, max_pixels);
  } catch (const kg::DataError& e) {
    return e.what();
  }
  return "(no error)";
}

}  // namespace

TEST_CASE("image headers: every format kgtrain decodes gives its size before decoding", "[unit][data]") {
  struct Case {
    const char* ext;
    ImageFormat format;
    int channels;
  };
  for (const auto& c :
       {Case{".png", ImageFormat::png, 3}, Case{".jpg", ImageFormat::jpeg, 3}, Case{".bmp", ImageFormat::bmp, 3},
        Case{".webp", ImageFormat::webp, 3}, Case{".tiff", ImageFormat::tiff, 1}, Case{".ppm", ImageFormat::pnm, 3},
        Case{".pgm", ImageFormat::pnm, 1}, Case{".pam", ImageFormat::pnm, 3}}) {
    INFO(c.ext);
    const std::string formats = kg::data::image_formats();
    const bool writable = (c.format != ImageFormat::webp || formats.find("webp") != std::string::npos) &&
                          (c.format != ImageFormat::tiff || formats.find("tiff") != std::string::npos);
    if (!writable) continue;  // this build has no libwebp / libtiff to write the fixture with
    const auto h = kg::data::read_image_header(encode(c.ext, c.channels, 7, 5));
    CHECK(h.format == c.format);
    CHECK(h.width == 7);
    CHECK(h.height == 5);
  }
  // Lossy WebP (VP8) too, and a PNM header with a comment.
  if (kg::data::image_formats().find("webp") != std::string::npos)
    CHECK(kg::data::read_image_header(encode(".webp-lossy", 3, 9, 4)).width == 9);
  const auto pgm = kg::data::read_image_header("P5\n# made by hand\n 12 34\n255\n");
  CHECK((pgm.format == ImageFormat::pnm && pgm.width == 12 && pgm.height == 34));
  CHECK(kg::data::read_image_header("GIF89a....").format == ImageFormat::unknown);
}

TEST_CASE("image headers: a declared size above data.max_image_pixels is refused before any pixel is decoded",
          "[unit][data]") {
  // A real 1 x 1 PNG whose IHDR now says 30000 x 30000 (2.7 GB decoded): refused from the header.
  std::string png = encode(".png", 3, 1, 1);
  const char big[4] = {0, 0, 0x75, 0x30};  // 30000, big-endian
  png.replace(16, 4, big, 4);
  png.replace(20, 4, big, 4);
  CHECK_THAT(decode_error(png), Catch::Contains("image x.img: its PNG header declares 30000 x 30000 pixels, more "
                                                "than data.max_image_pixels = 89478485"));
  // JPEG: the frame header's size.
  std::string jpg = encode(".jpg", 3, 8, 8);
  const auto sof = jpg.find("\xff\xc0");
  REQUIRE(sof != std::string::npos);
  jpg.replace(sof + 5, 4, std::string("\x75\x30\x75\x30", 4));
  CHECK_THAT(decode_error(jpg), Catch::Contains("its JPEG header declares 30000 x 30000 pixels"));
  // The limit is exact: 7 x 5 = 35 pixels. Each decode gets its own (no process-wide state): a lower one for one
  // call leaves the next call's default alone.
  const auto small = encode(".png", 3, 7, 5);
  CHECK(kg::data::decode_image_bytes(small, "s.png", 3, 1, 35).cols == 7);
  CHECK_THAT(decode_error(small, 34), Catch::Contains("declares 7 x 5 pixels, more than data.max_image_pixels = 34"));
  CHECK(kg::data::decode_image_bytes(small, "s.png", 3).cols == 7);
  // PNM's reader checks the size it parses itself too.
  const auto ppm = encode(".ppm", 3, 7, 5);
  CHECK(kg::data::decode_image_bytes(ppm, "s.ppm", 3, 1, 35).rows == 5);
  CHECK_THAT(decode_error(ppm, 34), Catch::Contains("more than data.max_image_pixels = 34"));
}

TEST_CASE("image headers: formats kgtrain does not decode are refused by name, DICOM among them", "[unit][data]") {
  // OpenCV hands a file with "DICM" at byte 128 to GDCM, which aborts the process on some damaged ones
  // (tests/fuzz/regressions/image): kgtrain never passes it on.
  std::string dicom(128, '\0');
  dicom += "DICM" + std::string(64, '\x01');
  const auto msg = decode_error(dicom);
  CHECK_THAT(msg, Catch::Contains("cannot decode image x.img: not PNG, JPEG, BMP, WebP, TIFF or PNM (it starts with "
                                  "00 00 00 00 00 00 00 00)"));
  CHECK_THAT(msg, Catch::Contains("convert others (DICOM, EXR, GIF, ...) to PNG first"));
  CHECK_THAT(decode_error("#?RADIANCE\nFORMAT=32-bit_rle_rgbe\n"), Catch::Contains("it starts with 23 3f 52 41"));
}

}  // namespace KG_UNITY_ID
}  // namespace
