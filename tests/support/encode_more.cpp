// WebP and TIFF fixtures through libwebp and libtiff, BMP and PNM written by hand (see encode.h).
#include <cstring>
#include <stdexcept>

#if KG_WITH_TIFF
#include <tiffio.h>
#endif
#if KG_WITH_WEBP
#include <webp/encode.h>
#endif

#include "support/encode.h"

namespace kg::test {
namespace {

#if KG_WITH_TIFF
// A growable in-memory file for libtiff's client I/O.
struct MemFile {
  std::string bytes;
  toff_t at = 0;
};

tmsize_t mem_read(thandle_t h, void* out, tmsize_t n) {
  auto* f = static_cast<MemFile*>(h);
  const toff_t take = std::min<toff_t>(static_cast<toff_t>(n), f->at < f->bytes.size() ? f->bytes.size() - f->at : 0);
  std::memcpy(out, f->bytes.data() + f->at, take);
  f->at += take;
  return static_cast<tmsize_t>(take);
}
tmsize_t mem_write(thandle_t h, void* data, tmsize_t n) {
  auto* f = static_cast<MemFile*>(h);
  if (f->at + static_cast<toff_t>(n) > f->bytes.size()) f->bytes.resize(f->at + static_cast<toff_t>(n));
  std::memcpy(f->bytes.data() + f->at, data, static_cast<size_t>(n));
  f->at += static_cast<toff_t>(n);
  return n;
}
toff_t mem_seek(thandle_t h, toff_t off, int whence) {
  auto* f = static_cast<MemFile*>(h);
  f->at = (whence == SEEK_SET ? 0 : whence == SEEK_CUR ? f->at : f->bytes.size()) + off;
  return f->at;
}
int mem_close(thandle_t) { return 0; }
toff_t mem_size(thandle_t h) { return static_cast<MemFile*>(h)->bytes.size(); }
int mem_map(thandle_t, void**, toff_t*) { return 0; }
void mem_unmap(thandle_t, void*, toff_t) {}
#endif

void le(std::string& out, uint32_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) out += static_cast<char>((v >> (8 * i)) & 0xFF);
}

}  // namespace

std::string encode_webp(const cv::Mat& m, int quality) {
#if !KG_WITH_WEBP
  throw std::runtime_error("encode_webp: this build has no libwebp");
#else
  uint8_t* out = nullptr;
  const int stride = static_cast<int>(m.step[0]);
  size_t n = 0;
  if (m.channels() == 3)
    n = quality < 0 ? WebPEncodeLosslessRGB(m.data, m.cols, m.rows, stride, &out)
                    : WebPEncodeRGB(m.data, m.cols, m.rows, stride, static_cast<float>(quality), &out);
  else if (m.channels() == 4)
    n = quality < 0 ? WebPEncodeLosslessRGBA(m.data, m.cols, m.rows, stride, &out)
                    : WebPEncodeRGBA(m.data, m.cols, m.rows, stride, static_cast<float>(quality), &out);
  std::string bytes(reinterpret_cast<const char*>(out), n);
  WebPFree(out);
  if (n == 0) throw std::runtime_error("test WebP encoder failed");
  return bytes;
#endif
}

std::string encode_tiff(const cv::Mat& m, bool lzw) {
#if !KG_WITH_TIFF
  throw std::runtime_error("encode_tiff: this build has no libtiff");
#else
  MemFile f;
  TIFF* t = TIFFClientOpen("mem", "w", &f, mem_read, mem_write, mem_seek, mem_close, mem_size, mem_map, mem_unmap);
  if (!t) throw std::runtime_error("test TIFF encoder: cannot open");
  TIFFSetField(t, TIFFTAG_IMAGEWIDTH, static_cast<uint32_t>(m.cols));
  TIFFSetField(t, TIFFTAG_IMAGELENGTH, static_cast<uint32_t>(m.rows));
  TIFFSetField(t, TIFFTAG_BITSPERSAMPLE, static_cast<uint16_t>(m.depth() == CV_16U ? 16 : 8));
  TIFFSetField(t, TIFFTAG_SAMPLESPERPIXEL, static_cast<uint16_t>(m.channels()));
  TIFFSetField(t, TIFFTAG_PHOTOMETRIC, m.channels() == 1 ? PHOTOMETRIC_MINISBLACK : PHOTOMETRIC_RGB);
  TIFFSetField(t, TIFFTAG_PLANARCONFIG, PLANARCONFIG_CONTIG);
  TIFFSetField(t, TIFFTAG_COMPRESSION, lzw ? COMPRESSION_LZW : COMPRESSION_NONE);
  TIFFSetField(t, TIFFTAG_ROWSPERSTRIP, 1u);
  bool ok = true;
  for (int y = 0; y < m.rows && ok; ++y) ok = TIFFWriteScanline(t, const_cast<uint8_t*>(m.ptr<uint8_t>(y)), y, 0) >= 0;
  TIFFClose(t);
  if (!ok) throw std::runtime_error("test TIFF encoder failed");
  return f.bytes;
#endif
}

std::string encode_bmp(const cv::Mat& m) {
  const int bpp = m.channels() * 8, w = m.cols, h = m.rows;
  const uint32_t palette = m.channels() == 1 ? 256 * 4 : 0, stride = (static_cast<uint32_t>(w) * bpp / 8 + 3) & ~3u;
  const uint32_t offset = 14 + 40 + palette;
  std::string out = "BM";
  le(out, offset + stride * static_cast<uint32_t>(h), 4);
  le(out, 0, 4);
  le(out, offset, 4);
  for (uint32_t v : {40u, static_cast<uint32_t>(w), static_cast<uint32_t>(h)}) le(out, v, 4);
  le(out, 1, 2);
  le(out, static_cast<uint32_t>(bpp), 2);
  for (int i = 0; i < 6; ++i) le(out, 0, 4);  // BI_RGB, sizes, resolution, all colors
  for (uint32_t i = 0; palette && i < 256; ++i) le(out, i * 0x010101u, 4);
  for (int y = h - 1; y >= 0; --y) {  // bottom-up
    std::string row;
    const uint8_t* p = m.ptr<uint8_t>(y);
    for (int x = 0; x < w; ++x) {
      const uint8_t* px = p + x * m.channels();
      if (m.channels() == 1) row += static_cast<char>(px[0]);
      if (m.channels() >= 3) row += {static_cast<char>(px[2]), static_cast<char>(px[1]), static_cast<char>(px[0])};
      if (m.channels() == 4) row += static_cast<char>(px[3]);
    }
    row.resize(stride, '\0');
    out += row;
  }
  return out;
}

std::string encode_pnm(const cv::Mat& m, bool plain, bool pam) {
  const bool wide = m.depth() == CV_16U;
  const int maxval = wide ? 65535 : 255, c = m.channels();
  std::string out;
  if (pam)
    out = "P7\nWIDTH " + std::to_string(m.cols) + "\nHEIGHT " + std::to_string(m.rows) + "\nDEPTH " +
          std::to_string(c) + "\nMAXVAL " + std::to_string(maxval) + "\nTUPLTYPE " +
          (c == 1 ? "GRAYSCALE" : c == 2 ? "GRAYSCALE_ALPHA" : c == 3 ? "RGB" : "RGB_ALPHA") + "\nENDHDR\n";
  else
    out = std::string(c == 1 ? (plain ? "P2" : "P5") : (plain ? "P3" : "P6")) + "\n# kgtrain test\n" +
          std::to_string(m.cols) + " " + std::to_string(m.rows) + "\n" + std::to_string(maxval) + "\n";
  for (int y = 0; y < m.rows; ++y)
    for (int i = 0; i < m.cols * c; ++i) {
      const unsigned v = wide ? m.ptr<uint16_t>(y)[i] : m.ptr<uint8_t>(y)[i];
      if (plain)
        out += std::to_string(v) + (i % 16 == 15 ? "\n" : " ");
      else if (wide)
        out += {static_cast<char>(v >> 8), static_cast<char>(v & 0xFF)};
      else
        out += static_cast<char>(v);
    }
  return out;
}

}  // namespace kg::test
