// BMP, our own decoder (the format is a header and rows): 1/4/8-bit palettes, 16-bit 5-5-5 and 5-6-5, 24-bit and
// 32-bit (BI_RGB or BI_BITFIELDS), bottom-up or top-down, the OS/2 header too. A palette of grays decodes to gray,
// as OpenCV's BmpDecoder (imgcodecs/src/grfmt_bmp.cpp) does, and 16-bit pixels widen by its shifts. RLE-compressed
// files are refused with a message saying to convert them.
#include <cstring>
#include <vector>

#include "data/codecs/codecs.h"

namespace kg::data::codecs {
namespace {

uint32_t u16(const uint8_t* p) { return p[0] | (p[1] << 8); }
uint32_t u32(const uint8_t* p) { return u16(p) | (u16(p + 2) << 16); }

struct Rgb {
  uint8_t r = 0, g = 0, b = 0;
};

// Value of the bits under `mask` scaled to 8 bits (0 for an empty mask).
uint8_t field(uint32_t v, uint32_t mask) {
  if (!mask) return 0;
  int shift = 0;
  while (!((mask >> shift) & 1)) ++shift;
  const uint32_t max = mask >> shift;
  return static_cast<uint8_t>(((v & mask) >> shift) * 255u / max);
}

void put16(uint32_t t, bool is565, uint8_t* rgb) {
  // OpenCV's icvCvt_BGR5552BGR / BGR5652BGR: the bits shifted up, not replicated into the low ones.
  rgb[2] = static_cast<uint8_t>(t << 3);
  rgb[1] = static_cast<uint8_t>(is565 ? (t >> 3) & ~3u : (t >> 2) & ~7u);
  rgb[0] = static_cast<uint8_t>(is565 ? (t >> 8) & ~7u : (t >> 7) & ~7u);
}

}  // namespace

Image decode_bmp(std::string_view bytes, const std::string& name) {
  const auto* b = reinterpret_cast<const uint8_t*>(bytes.data());
  const size_t n = bytes.size();
  if (n < 26 || b[0] != 'B' || b[1] != 'M') damaged(name, "the BMP header is cut short");
  const size_t offset = u32(b + 10), dib = u32(b + 14);
  const bool core = dib == 12;
  if (!core && (dib < 40 || n < 14 + 40)) damaged(name, "an unknown BMP header (" + std::to_string(dib) + " bytes)");
  const int64_t width = core ? static_cast<int64_t>(u16(b + 18)) : static_cast<int32_t>(u32(b + 18));
  const int64_t signed_h = core ? static_cast<int64_t>(u16(b + 20)) : static_cast<int32_t>(u32(b + 22));
  const int bpp = static_cast<int>(u16(b + (core ? 24 : 28)));
  const uint32_t compression = core ? 0 : u32(b + 30);
  const bool top_down = signed_h < 0;
  const int64_t height = top_down ? -signed_h : signed_h;
  if (width <= 0 || height <= 0 || width > INT32_MAX / 4 || height > INT32_MAX / 4)
    damaged(name, "the BMP header gives no usable image size");
  if (compression == 1 || compression == 2)
    fail(name, "an RLE-compressed BMP, which kgtrain does not decode; convert the images to PNG");
  if (compression != 0 && compression != 3 && compression != 6)
    fail(name, "a BMP with compression " + std::to_string(compression) + " (JPEG or PNG inside), which kgtrain does "
               "not decode; convert the images to PNG");
  if (bpp != 1 && bpp != 4 && bpp != 8 && bpp != 16 && bpp != 24 && bpp != 32)
    damaged(name, "a BMP with " + std::to_string(bpp) + " bits per pixel");

  // Palette (1-8 bit) and channel masks (16/32 bit).
  std::vector<Rgb> palette;
  bool gray_palette = true;
  const size_t pal_at = 14 + dib, entry = core ? 3 : 4;
  if (bpp <= 8) {
    size_t colors = core ? 0 : u32(b + 46);
    if (colors == 0 || colors > (1u << bpp)) colors = size_t{1} << bpp;
    if (pal_at + colors * entry > n) damaged(name, "the BMP palette is cut short");
    for (size_t i = 0; i < colors; ++i) {
      const uint8_t* p = b + pal_at + i * entry;
      palette.push_back({p[2], p[1], p[0]});
      gray_palette &= p[0] == p[1] && p[1] == p[2];
    }
    palette.resize(size_t{1} << bpp);  // indices past the palette read black
  }
  uint32_t masks[3] = {0x00FF0000u, 0x0000FF00u, 0x000000FFu};
  bool is565 = false;
  if (compression == 3 || compression == 6) {
    const size_t at = dib >= 52 ? 54 : 14 + dib;  // inside a V2+ header, else after it
    if (at + 12 > n) damaged(name, "the BMP channel masks are cut short");
    for (int c = 0; c < 3; ++c) masks[c] = u32(b + at + 4 * c);
    is565 = bpp == 16 && masks[1] == 0x07E0u;
  }

  const size_t stride = ((static_cast<size_t>(width) * bpp + 31) / 32) * 4;
  if (offset > n || stride * static_cast<size_t>(height) > n - offset)
    damaged(name, "the BMP pixel data ends early: a truncated file");
  const bool gray = bpp <= 8 && gray_palette;
  Image img(static_cast<int>(height), static_cast<int>(width), image_type(kDepth8U, gray ? 1 : 3));
  for (int64_t y = 0; y < height; ++y) {
    const uint8_t* row = b + offset + stride * static_cast<size_t>(top_down ? y : height - 1 - y);
    uint8_t* dst = img.ptr<uint8_t>(static_cast<int>(y));
    for (int64_t x = 0; x < width; ++x) {
      uint8_t* px = dst + (gray ? x : 3 * x);
      if (bpp <= 8) {
        const size_t bit = static_cast<size_t>(x) * bpp;
        const int index = (row[bit / 8] >> (8 - bpp - bit % 8)) & ((1 << bpp) - 1);
        const Rgb& c = palette[static_cast<size_t>(index)];
        if (gray) {
          *px = c.r;
        } else {
          px[0] = c.r, px[1] = c.g, px[2] = c.b;
        }
      } else if (bpp == 16 && compression == 0) {
        put16(u16(row + 2 * x), false, px);
      } else if (bpp == 16) {
        if (is565 || masks[1] == 0x03E0u)
          put16(u16(row + 2 * x), is565, px);
        else
          for (int c = 0; c < 3; ++c) px[c] = field(u16(row + 2 * x), masks[c]);
      } else if (bpp == 24 || compression == 0) {
        const uint8_t* p = row + static_cast<size_t>(x) * (bpp / 8);
        px[0] = p[2], px[1] = p[1], px[2] = p[0];
      } else {
        for (int c = 0; c < 3; ++c) px[c] = field(u32(row + 4 * x), masks[c]);
      }
    }
  }
  return img;
}

}  // namespace kg::data::codecs
