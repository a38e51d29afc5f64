#include "data/image_io.h"

#include <climits>
#include <utility>
#include <vector>

#if KG_WITH_OPENCV
#include <opencv2/core/utility.hpp>
#include <opencv2/core/version.hpp>
#include <opencv2/imgproc.hpp>
#endif
#if KG_WITH_IMGCODECS
#include <opencv2/imgcodecs.hpp>
#endif
#include <zlib.h>

#include "core/error.h"
#include "core/fs.h"
#include "data/image_header.h"

namespace kg::data {
namespace {

#if KG_WITH_IMGCODECS
// An explicit level pins the bytes across OpenCV defaults. Measured on Fashion-MNIST: level 1 is
// 10% smaller than OpenCV's default (RLE) at the same speed; level 6 saves 3% more for 25% more time.
const std::vector<int> kPngParams = {cv::IMWRITE_PNG_COMPRESSION, 1};
#endif

void put_u32(std::string& out, uint32_t v) {
  for (int shift = 24; shift >= 0; shift -= 8) out.push_back(static_cast<char>((v >> shift) & 0xFF));
}

// One PNG chunk: length, type, data, CRC-32 of type + data.
void put_chunk(std::string& out, const char* type, const std::string& data) {
  put_u32(out, static_cast<uint32_t>(data.size()));
  const size_t at = out.size();
  out.append(type, 4);
  out += data;
  const auto* p = reinterpret_cast<const Bytef*>(out.data() + at);
  put_u32(out, static_cast<uint32_t>(crc32(0L, p, static_cast<uInt>(4 + data.size()))));
}

#if KG_WITH_IMGCODECS
// Brings any decoded depth to 8 bits.
void to_8bit(Image& m, const std::string& name) {
  switch (m.depth()) {
    case CV_8U:
      return;
    case CV_16U:
      m.convertTo(m, CV_8U, 1.0 / 257.0);
      return;  // 65535 -> 255 exactly
    case CV_32F:
    case CV_64F:
      m.convertTo(m, CV_8U, 255.0);
      return;  // HDR/TIFF floats are nominally [0, 1]
    default:
      throw DataError("cannot decode image " + name + ": unsupported sample type (signed or " +
                      "32-bit integer samples); convert it to 8- or 16-bit unsigned");
  }
}

// BGR -> RGB in place: cv::cvtColor would copy the whole image for an in-place call.
void swap_red_blue(Image& m) {
  for (int r = 0; r < m.rows; ++r) {
    uchar* p = m.ptr<uchar>(r);
    uchar* end = p + static_cast<size_t>(m.cols) * 3;
    for (; p != end; p += 3) std::swap(p[0], p[2]);
  }
}
#endif

}  // namespace

bool can_decode_images() { return KG_WITH_IMGCODECS != 0; }

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

Image decode_image_bytes(std::string_view bytes, const std::string& name, int channels, int reduce) {
  KG_ASSERT(channels == 1 || channels == 3, "channels=", channels);
  KG_ASSERT(reduce == 1 || reduce == 2 || reduce == 4 || reduce == 8, "reduce=", reduce);
  KG_CHECK(!bytes.empty(), DataError, "image ", name, " is empty (0 bytes)");
  KG_CHECK(bytes.size() <= static_cast<size_t>(INT_MAX), DataError, "image ", name, " is too large (", bytes.size(),
           " bytes)");
#if !KG_WITH_IMGCODECS
  throw DataError("cannot decode image " + name + ": this kgtrain was built without " +
                  std::string(KG_WITH_OPENCV ? "OpenCV's image codecs (imgcodecs)" : "OpenCV") +
                  ", and image decoding needs them. Rebuild with them (Debian/Ubuntu: apt-get install libopencv-dev), "
                  "or train from data that needs no decoding: an IDX " +
                  "file, a raw pack (`kgtrain pack --raw` on a machine whose kgtrain decodes), or " +
                  "data.cache = \"device\" over such a source");
#else
  check_image_header(bytes, name);  // a format kgtrain decodes, within data.max_image_pixels
  // imdecode only reads the buffer; the cast is for the Mat constructor.
  const Image buf(1, static_cast<int>(bytes.size()), CV_8UC1, const_cast<char*>(bytes.data()));
  Image m;
  try {
    // ANYDEPTH|ANYCOLOR rather than IMREAD_UNCHANGED: it still keeps 16-bit and gray images, but
    // yields 1 or 3 channels (alpha dropped) and applies EXIF orientation, which OpenCV 4.6 skips
    // for IMREAD_UNCHANGED (checked with a rotated JPEG, see test_image_io.cpp).
    // IMREAD_REDUCED_COLOR_N: libjpeg's DCT-domain scaling, 8-bit BGR (JPEG only; other codecs resize after decoding).
    const int reduced = reduce == 2   ? cv::IMREAD_REDUCED_COLOR_2
                        : reduce == 4 ? cv::IMREAD_REDUCED_COLOR_4
                                      : cv::IMREAD_REDUCED_COLOR_8;
    m = cv::imdecode(buf, reduce == 1 ? cv::IMREAD_ANYDEPTH | cv::IMREAD_ANYCOLOR : reduced);
  } catch (const cv::Exception&) {
    m.release();  // a damaged file can make a codec throw; same message as an empty result
  }
  KG_CHECK(!m.empty(), DataError, "cannot decode image ", name, ": not a supported image or damaged");
  to_8bit(m, name);
  // Codecs outside the PNG/JPEG path can still hand back 2 or 4 channels.
  if (m.channels() == 4) cv::cvtColor(m, m, cv::COLOR_BGRA2BGR);
  if (m.channels() == 2) cv::extractChannel(m, m, 0);

  if (channels == 3) {
    if (m.channels() == 1) {
      Image rgb;
      cv::cvtColor(m, rgb, cv::COLOR_GRAY2RGB);
      return rgb;
    }
    swap_red_blue(m);
    return m;
  }
  if (m.channels() == 3) {
    Image gray;
    cv::cvtColor(m, gray, cv::COLOR_BGR2GRAY);  // m is still BGR here: same as RGB2GRAY on RGB
    return gray;
  }
  return m;
#endif
}

Image decode_image(const std::string& path, int channels) {
  return decode_image_bytes(read_file(path), path, channels);
}

void encode_png_zlib(const Image& img, std::string& out) {
  KG_ASSERT(img.depth() == kDepth8U && (img.channels() == 1 || img.channels() == 3),
            "encode_png wants 8-bit gray or RGB, got type ", img.type());
  const size_t row_bytes = static_cast<size_t>(img.cols) * img.channels();
  // Each scanline: filter type 1 (Sub: each byte minus the one a pixel to its left), which suits
  // photographs and charts alike, then the row.
  std::string raw;
  raw.reserve((row_bytes + 1) * img.rows);
  const size_t bpp = img.channels();
  for (int r = 0; r < img.rows; ++r) {
    const uint8_t* p = img.ptr<uint8_t>(r);
    raw.push_back(1);
    for (size_t i = 0; i < row_bytes; ++i) raw.push_back(static_cast<char>(p[i] - (i >= bpp ? p[i - bpp] : 0)));
  }
  uLongf packed_size = compressBound(static_cast<uLong>(raw.size()));
  std::string packed(packed_size, '\0');
  const int rc = compress2(reinterpret_cast<Bytef*>(packed.data()), &packed_size,
                           reinterpret_cast<const Bytef*>(raw.data()), static_cast<uLong>(raw.size()), 6);
  KG_CHECK(rc == Z_OK, DataError, "cannot encode a ", img.cols, "x", img.rows, " PNG (zlib error ", rc, ")");
  packed.resize(packed_size);

  std::string header;
  put_u32(header, static_cast<uint32_t>(img.cols));
  put_u32(header, static_cast<uint32_t>(img.rows));
  header += std::string{8, static_cast<char>(img.channels() == 3 ? 2 : 0), 0, 0,
                        0};  // depth, colour, deflate, filter, no interlace
  out.assign("\x89PNG\r\n\x1a\n", 8);
  put_chunk(out, "IHDR", header);
  put_chunk(out, "IDAT", packed);
  put_chunk(out, "IEND", "");
}

void encode_png(const Image& img, std::string& out) {
#if !KG_WITH_IMGCODECS
  encode_png_zlib(img, out);
#else
  KG_ASSERT(img.depth() == CV_8U && (img.channels() == 1 || img.channels() == 3),
            "encode_png wants CV_8UC1 or CV_8UC3, got type ", img.type());
  Image bgr;
  if (img.channels() == 3) cv::cvtColor(img, bgr, cv::COLOR_RGB2BGR);
  std::vector<uchar> buf;
  bool ok = cv::imencode(".png", img.channels() == 3 ? bgr : img, buf, kPngParams);
  KG_CHECK(ok, DataError, "cannot encode a ", img.cols, "x", img.rows, " PNG");
  out.assign(reinterpret_cast<const char*>(buf.data()), buf.size());
#endif
}

void write_png_atomic(const std::string& path, const Image& rgb_or_gray) {
  std::string bytes;
  encode_png(rgb_or_gray, bytes);
  write_file_atomic(path, bytes);
}

}  // namespace kg::data
