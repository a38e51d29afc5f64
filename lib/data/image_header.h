// What an image file declares before a pixel is decoded: its format and its size. Decoding refuses, from the header
// alone, a format kgtrain does not decode (OpenCV's other codecs, DICOM's among them, abort the process on some
// damaged files) and an image larger than data.max_image_pixels (a decompression bomb: a 100 KB PNG can declare
// 30000 x 30000 pixels, 2.7 GB decoded), as PIL's Image.MAX_IMAGE_PIXELS does.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>

namespace kg::data {

enum class ImageFormat { unknown, png, jpeg, bmp, webp, tiff, pnm };

struct ImageHeader {
  ImageFormat format = ImageFormat::unknown;
  int64_t width = 0, height = 0;  // 0 when the header is too short or damaged to say (the decoder then reports it)
};

// From the signature and the header fields (PNG IHDR, JPEG SOF, BMP DIB, WebP VP8/VP8L/VP8X, TIFF's first IFD,
// PNM/PAM).
ImageHeader read_image_header(std::string_view bytes);
const char* image_format_name(ImageFormat f);

// PIL's default, 1024 * 1024 * 1024 / 4 / 3 pixels (a 9459 x 9459 image): data.max_image_pixels's default. Each
// decode is given its limit (the table's, from its recipe): there is no process-wide one, so two recipes in one
// process (a sweep, the tests) cannot change each other's.
inline constexpr int64_t kDefaultMaxImagePixels = 89478485;

// DataError naming `name` when `bytes` are not PNG, JPEG, BMP, WebP, TIFF or PNM/PAM, or declare more pixels than
// `max_pixels` (data.max_image_pixels); else the header (its format picks the decoder).
ImageHeader check_image_header(std::string_view bytes, const std::string& name,
                               int64_t max_pixels = kDefaultMaxImagePixels);

}  // namespace kg::data
