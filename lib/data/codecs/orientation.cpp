// EXIF orientation: the tag's reader and the flips and transposes that apply it, as OpenCV's ExifReader and
// ApplyExifOrientation (imgcodecs/src/exif.cpp, loadsave.cpp) do, for Image with or without OpenCV.
#include <cstring>

#include "data/codecs/codecs.h"

namespace kg::data::codecs {

int exif_orientation(const uint8_t* t, size_t size) {
  if (size < 8) return 0;
  const bool little = t[0] == 'I' && t[1] == 'I';
  if (!little && !(t[0] == 'M' && t[1] == 'M')) return 0;
  auto u16 = [&](size_t at) -> uint32_t {
    return little ? t[at] | (t[at + 1] << 8) : (t[at] << 8) | t[at + 1];
  };
  auto u32 = [&](size_t at) -> uint32_t {
    return little ? u16(at) | (u16(at + 2) << 16) : (u16(at) << 16) | u16(at + 2);
  };
  if (u16(2) != 0x2A) return 0;
  const size_t ifd = u32(4);
  if (ifd > size - 2) return 0;
  const size_t entries = u16(ifd);
  for (size_t i = 0; i < entries; ++i) {
    const size_t e = ifd + 2 + 12 * i;
    if (e + 12 > size) return 0;
    if (u16(e) == 0x0112) {
      const uint32_t v = u16(e + 8);
      return v >= 1 && v <= 8 ? static_cast<int>(v) : 0;
    }
  }
  return 0;
}

Image apply_orientation(const Image& img, int o) {
  if (o < 2 || o > 8 || img.empty()) return img;
  const int w = img.cols, h = img.rows;
  const bool transposed = o >= 5;
  Image out(transposed ? w : h, transposed ? h : w, img.type());
  const size_t px = img.elemSize();
  for (int y = 0; y < out.rows; ++y) {
    uint8_t* dst = out.ptr<uint8_t>(y);
    for (int x = 0; x < out.cols; ++x) {
      int sx = x, sy = y;  // the source pixel shown at (x, y)
      switch (o) {
        case 2: sx = w - 1 - x; break;                    // flip(1)
        case 3: sx = w - 1 - x; sy = h - 1 - y; break;    // flip(-1)
        case 4: sy = h - 1 - y; break;                    // flip(0)
        case 5: sx = y; sy = x; break;                    // transpose
        case 6: sx = y; sy = h - 1 - x; break;            // transpose, flip(1): 90 degrees clockwise
        case 7: sx = w - 1 - y; sy = h - 1 - x; break;    // transpose, flip(-1)
        default: sx = w - 1 - y; sy = x; break;           // 8: transpose, flip(0): 90 degrees anticlockwise
      }
      std::memcpy(dst + static_cast<size_t>(x) * px, img.ptr<uint8_t>(sy) + static_cast<size_t>(sx) * px, px);
    }
  }
  return out;
}

}  // namespace kg::data::codecs
