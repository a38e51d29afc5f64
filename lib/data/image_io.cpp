#include "data/image_io.h"

#include <climits>

#if KG_WITH_OPENCV
#include <opencv2/core/utility.hpp>
#include <opencv2/core/version.hpp>
#include <opencv2/imgproc.hpp>
#endif

#include "core/error.h"
#include "core/fs.h"
#include "data/codecs/codecs.h"
#include "data/image_header.h"

namespace kg::data {
namespace {

// RGB -> gray with OpenCV's integer formula (cvtColor's RGB2GRAY for 8-bit: 14-bit fixed point, rounded), so a
// build without OpenCV gives the same gray pixels.
Image rgb_to_gray(const Image& rgb) {
#if KG_WITH_OPENCV
  Image gray;
  cv::cvtColor(rgb, gray, cv::COLOR_RGB2GRAY);
  return gray;
#else
  Image gray(rgb.rows, rgb.cols, image_type(kDepth8U, 1));
  for (int y = 0; y < rgb.rows; ++y) {
    const uint8_t* p = rgb.ptr<uint8_t>(y);
    uint8_t* g = gray.ptr<uint8_t>(y);
    for (int x = 0; x < rgb.cols; ++x, p += 3)
      g[x] = static_cast<uint8_t>((p[0] * 4899 + p[1] * 9617 + p[2] * 1868 + 8192) >> 14);
  }
  return gray;
#endif
}

Image gray_to_rgb(const Image& gray) {
  Image rgb(gray.rows, gray.cols, image_type(kDepth8U, 3));
  for (int y = 0; y < gray.rows; ++y) {
    const uint8_t* g = gray.ptr<uint8_t>(y);
    uint8_t* p = rgb.ptr<uint8_t>(y);
    for (int x = 0; x < gray.cols; ++x, p += 3) p[0] = p[1] = p[2] = g[x];
  }
  return rgb;
}

Image decode_as_stored(std::string_view bytes, const std::string& name, ImageFormat format, int reduce,
                       int64_t max_pixels) {
  switch (format) {
    case ImageFormat::jpeg:
      return codecs::decode_jpeg(bytes, name, reduce);
    case ImageFormat::png:
      return codecs::decode_png(bytes, name);
    case ImageFormat::webp:
      return codecs::decode_webp(bytes, name);
    case ImageFormat::tiff:
      return codecs::decode_tiff(bytes, name);
    case ImageFormat::bmp:
      return codecs::decode_bmp(bytes, name);
    case ImageFormat::pnm:
      return codecs::decode_pnm(bytes, name, max_pixels);
    case ImageFormat::unknown:
      break;
  }
  KG_ASSERT(false, "check_image_header let an unknown format through");
  return {};
}

}  // namespace

bool can_decode_images() { return true; }  // JPEG and PNG are always built (CMakeLists.txt requires them)

std::string image_formats() {
  std::string out = "jpeg png";
  if (codecs::has_webp()) out += " webp";
  if (codecs::has_tiff()) out += " tiff";
  return out + " bmp pnm";
}

std::string opencv_version() {
#if KG_WITH_OPENCV
  return CV_VERSION;
#else
  return "";
#endif
}

int opencv_threads() {
#if KG_WITH_OPENCV
  return cv::getNumThreads();
#else
  return 0;
#endif
}

Image decode_image_bytes(std::string_view bytes, const std::string& name, int channels, int reduce,
                         int64_t max_pixels) {
  KG_ASSERT(channels == 1 || channels == 3, "channels=", channels);
  KG_ASSERT(reduce == 1 || reduce == 2 || reduce == 4 || reduce == 8, "reduce=", reduce);
  KG_CHECK(!bytes.empty(), DataError, "image ", name, " is empty (0 bytes)");
  KG_CHECK(bytes.size() <= static_cast<size_t>(INT_MAX), DataError, "image ", name, " is too large (", bytes.size(),
           " bytes)");
  // A format kgtrain decodes, within data.max_image_pixels; reduce applies to JPEG only (the others are decoded
  // whole: the callers resize afterwards).
  const ImageHeader header = check_image_header(bytes, name, max_pixels);
  const Image m =
      decode_as_stored(bytes, name, header.format, header.format == ImageFormat::jpeg ? reduce : 1, max_pixels);
  KG_CHECK(!m.empty(), DataError, "cannot decode image ", name, ": not a supported image or damaged");
  if (m.channels() == channels) return m;
  return channels == 3 ? gray_to_rgb(m) : rgb_to_gray(m);
}

Image decode_image(const std::string& path, int channels, int64_t max_pixels) {
  return decode_image_bytes(read_file(path), path, channels, 1, max_pixels);
}

// zlib level 1 (codecs/png_write.cpp), measured on Fashion-MNIST: 10% smaller than OpenCV's old default (RLE) at the
// same speed; level 6 saves 3% more for 25% more time.
void encode_png(const Image& img, std::string& out) { codecs::encode_png(img, out); }

void write_png_atomic(const std::string& path, const Image& rgb_or_gray) {
  std::string bytes;
  encode_png(rgb_or_gray, bytes);
  write_file_atomic(path, bytes);
}

}  // namespace kg::data
