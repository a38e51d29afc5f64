// Test fixtures' image files, written by the reference libraries themselves (libjpeg-turbo, libpng, libwebp, libtiff)
// and by hand for BMP and PNM: the suite builds without OpenCV's imgcodecs. Pixels are given in the file's own order,
// RGB(A) or gray(+alpha), as 8-bit (or, for PNG, 16-bit) cv::Mat.
#pragma once
#include <string>
#include <vector>

#include <opencv2/core.hpp>

namespace kg::test {

struct JpegOptions {
  int quality = 90;
  int sampling = 420;  // chroma subsampling: 420, 422 or 444
  bool progressive = false;
  bool cmyk = false;   // 4-channel input written as Adobe CMYK (or YCCK with ycck)
  bool ycck = false;
};
// 1-channel (gray), 3-channel (RGB) or, with cmyk, 4-channel (CMYK) 8-bit pixels.
std::string encode_jpeg(const cv::Mat& pixels, const JpegOptions& o = {});
// `jpeg` with an APP1 Exif segment saying `orientation` (1..8) inserted after SOI.
std::string with_exif_orientation(const std::string& jpeg, int orientation);

// 1..4 channels (gray, gray+alpha, RGB, RGBA), 8- or 16-bit; Adam7 when interlace.
std::string encode_png(const cv::Mat& pixels, bool interlace = false);
// `png` with an eXIf chunk saying `orientation` (1..8) inserted after IHDR.
std::string with_png_exif_orientation(const std::string& png, int orientation);
// A palette PNG: `indices` (8-bit, 1 channel) into `palette` (RGB triples), with per-entry alpha (tRNS) when given,
// packed at bit_depth 1, 2, 4 or 8.
std::string encode_png_palette(const cv::Mat& indices, const std::vector<uint8_t>& palette,
                               const std::vector<uint8_t>& alpha = {}, int bit_depth = 8);
// A gray PNG at bit_depth 1, 2, 4 (samples 0 .. 2^depth - 1 in `gray`), with a tRNS gray value when trns >= 0.
std::string encode_png_gray(const cv::Mat& gray, int bit_depth, int trns = -1);

// WebP: 3 (RGB) or 4 (RGBA) channels; lossless when quality < 0.
std::string encode_webp(const cv::Mat& pixels, int quality = 80);

// TIFF: 1 or 3 channels, 8- or 16-bit, one strip per row, uncompressed or with LZW.
std::string encode_tiff(const cv::Mat& pixels, bool lzw = false);

// BMP: 24-bit from RGB, 8-bit with a gray palette from gray, 32-bit (BGRA, BI_RGB) from RGBA.
std::string encode_bmp(const cv::Mat& pixels);

// PNM: P5 (gray) or P6 (RGB) raw, 8- or 16-bit (maxval 255 / 65535); P2/P3 plain when plain; PAM (P7) when pam.
std::string encode_pnm(const cv::Mat& pixels, bool plain = false, bool pam = false);

}  // namespace kg::test
