// Image decoding and PNG encoding. Inside kgtrain images are 8-bit and in RGB order (OpenCV's BGR
// stays behind this boundary).
#pragma once
#include <string>
#include <string_view>

#include "data/image.h"

namespace kg::data {

// False when this build has no OpenCV image codecs (imgcodecs): decoding then throws a DataError
// that says so; PNG encoding still works (encode_png_zlib).
bool can_decode_images();
// OpenCV's version ("" in a build without OpenCV) and its worker threads (0 without).
std::string opencv_version();
int opencv_threads();

// Decodes the file at `path` (any format OpenCV reads) into an 8-bit image with exactly `channels`
// (1 or 3) channels: 8-bit gray or RGB. EXIF orientation is applied, alpha is dropped,
// 16-bit samples are scaled to 8-bit (/257), float samples are taken as [0, 1].
// DataError for a missing, empty or undecodable file.
Image decode_image(const std::string& path, int channels);

// Same, from bytes already in memory; `name` is used in messages. `reduce` 2, 4 or 8 decodes a JPEG at
// 1/reduce of its size in the DCT domain (libjpeg's scaled IDCT: ceil(size / reduce) pixels, no EXIF rotation).
Image decode_image_bytes(std::string_view bytes, const std::string& name, int channels, int reduce = 1);

// PNG bytes of an 8-bit gray or RGB image, replacing `out`. Deterministic:
// the same pixels always give the same bytes.
void encode_png(const Image& rgb_or_gray, std::string& out);

// The PNG encoder that needs only zlib: what encode_png uses in a build without imgcodecs.
void encode_png_zlib(const Image& rgb_or_gray, std::string& out);

// encode_png + write_file_atomic.
void write_png_atomic(const std::string& path, const Image& rgb_or_gray);

}  // namespace kg::data
