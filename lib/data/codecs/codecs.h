// The decoders behind decode_image_bytes (data/image_io.h), one file per format: JPEG on libjpeg-turbo, PNG on
// libpng, WebP on libwebp, TIFF on libtiff, BMP and PNM/PAM our own. Each returns the pixels as the file holds them,
// 8-bit gray (1 channel) or RGB (3 channels): alpha dropped (not composited), 16-bit samples rounded to 8 bits,
// the pixels OpenCV's imdecode(IMREAD_ANYCOLOR) gave before kgtrain stopped linking its imgcodecs (the tests compare
// the two where imgcodecs is installed). decode_image_bytes converts to the channel count asked for.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "data/image.h"

namespace kg::data::codecs {

// DataError "cannot decode image NAME: WHY".
[[noreturn]] void fail(const std::string& name, const std::string& why);
// fail(name, "not a supported image or damaged (DETAIL)"): what every decoder says about a damaged file.
[[noreturn]] void damaged(const std::string& name, const std::string& detail);

// `reduce` 2, 4 or 8: libjpeg's DCT-domain scaling to ceil(size / reduce), always RGB (OpenCV's
// IMREAD_REDUCED_COLOR_N). EXIF orientation is applied in both cases, as imdecode does.
Image decode_jpeg(std::string_view bytes, const std::string& name, int reduce);
Image decode_png(std::string_view bytes, const std::string& name);
Image decode_webp(std::string_view bytes, const std::string& name);
Image decode_tiff(std::string_view bytes, const std::string& name);
Image decode_bmp(std::string_view bytes, const std::string& name);
// `max_pixels`: data.max_image_pixels, checked again on the size the PNM reader itself finds.
Image decode_pnm(std::string_view bytes, const std::string& name, int64_t max_pixels);

// 8-bit gray or RGB to PNG with libpng, deterministic bytes (data::encode_png).
void encode_png(const Image& rgb_or_gray, std::string& out);

// Whether this build has the library a format needs (JPEG and PNG always do).
bool has_webp();
bool has_tiff();

// A 16-bit sample as OpenCV's convertTo(CV_8U, 1.0 / 257) gives it: rounded to nearest.
inline uint8_t to_8bit(uint32_t v) { return static_cast<uint8_t>((v + 128u) / 257u); }

// The orientation tag (1..8; 0 when absent or unreadable) of an EXIF block that starts at its TIFF header ("II" or
// "MM"), read from the first IFD as OpenCV's ExifReader does.
int exif_orientation(const uint8_t* tiff, size_t size);
// `img` turned upright for `orientation` (OpenCV's ApplyExifOrientation: flips and transposes only).
Image apply_orientation(const Image& img, int orientation);

}  // namespace kg::data::codecs
