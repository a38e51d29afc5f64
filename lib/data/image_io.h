// Image decoding and PNG encoding. Inside kgtrain images are 8-bit and in RGB order (OpenCV's BGR
// stays behind this boundary).
#pragma once
#include <string>
#include <string_view>

#include "data/image.h"
#include "data/image_header.h"

namespace kg::data {

// True: JPEG (libjpeg-turbo) and PNG (libpng) decoding are always built, with or without OpenCV.
bool can_decode_images();
// The formats this build decodes, space-separated: "jpeg png webp tiff bmp pnm" (webp and tiff only where
// libwebp and libtiff were found at build time; the others say so in a DataError).
std::string image_formats();
// OpenCV's version ("" in a build without OpenCV) and its worker threads (0 without).
std::string opencv_version();
int opencv_threads();

// Decodes the file at `path` (JPEG, PNG, WebP, TIFF, BMP or PNM/PAM, see data/codecs/codecs.h) into an 8-bit
// image with exactly `channels` (1 or 3) channels: 8-bit gray or RGB. EXIF orientation is applied (JPEG, PNG),
// alpha is dropped, 16-bit samples are rounded to 8-bit (/257); gray <-> RGB by OpenCV's formulas.
// DataError for a missing, empty, truncated or undecodable file ("cannot decode image NAME: ..."), or one that
// declares more than `max_pixels` (data.max_image_pixels: a decompression bomb).
Image decode_image(const std::string& path, int channels, int64_t max_pixels = kDefaultMaxImagePixels);

// Same, from bytes already in memory; `name` is used in messages. `reduce` 2, 4 or 8 decodes a JPEG at
// 1/reduce of its size in the DCT domain (libjpeg's scaled IDCT: ceil(size / reduce) pixels); other formats
// ignore it.
Image decode_image_bytes(std::string_view bytes, const std::string& name, int channels, int reduce = 1,
                         int64_t max_pixels = kDefaultMaxImagePixels);

// PNG bytes of an 8-bit gray or RGB image, replacing `out`. Deterministic:
// the same pixels always give the same bytes.
void encode_png(const Image& rgb_or_gray, std::string& out);

// encode_png + write_file_atomic.
void write_png_atomic(const std::string& path, const Image& rgb_or_gray);

}  // namespace kg::data
