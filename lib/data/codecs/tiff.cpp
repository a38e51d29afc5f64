// TIFF through libtiff, from memory: the first page. 16-bit gray and RGB (contiguous strips) are read as samples and
// rounded to 8 bits; everything else libtiff's RGBA interface handles (1-8 bit, palette, YCbCr, CMYK, tiles, planar,
// orientation) comes through it: gray photometrics stay gray, the rest become RGB, alpha dropped. Messages go to
// the DataError, never to stderr (per-handle handlers, libtiff >= 4.5).
#include "data/codecs/codecs.h"

#if KG_WITH_TIFF
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <vector>

#include <tiffio.h>
#endif

namespace kg::data::codecs {

#if KG_WITH_TIFF

bool has_tiff() { return true; }

namespace {

struct Source {
  std::string_view bytes;
  toff_t at = 0;
  char message[256] = {};
};

tmsize_t on_read(thandle_t h, void* out, tmsize_t n) {
  auto* s = static_cast<Source*>(h);
  const toff_t left = s->at < s->bytes.size() ? s->bytes.size() - s->at : 0;
  const toff_t take = std::min<toff_t>(left, static_cast<toff_t>(n));
  std::memcpy(out, s->bytes.data() + s->at, take);
  s->at += take;
  return static_cast<tmsize_t>(take);
}
tmsize_t on_write(thandle_t, void*, tmsize_t) { return 0; }
toff_t on_seek(thandle_t h, toff_t off, int whence) {
  auto* s = static_cast<Source*>(h);
  const toff_t base = whence == SEEK_SET ? 0 : whence == SEEK_CUR ? s->at : s->bytes.size();
  s->at = base + off;
  return s->at;
}
int on_close(thandle_t) { return 0; }
toff_t on_size(thandle_t h) { return static_cast<Source*>(h)->bytes.size(); }
int on_map(thandle_t, void**, toff_t*) { return 0; }
void on_unmap(thandle_t, void*, toff_t) {}

#if TIFFLIB_VERSION >= 20221213
int on_error(TIFF*, void* user, const char* module, const char* fmt, va_list ap) {
  auto* s = static_cast<Source*>(user);
  if (!s->message[0]) std::vsnprintf(s->message, sizeof s->message, fmt, ap);
  return 1;
}
int on_warning(TIFF*, void*, const char*, const char*, va_list) { return 1; }
#endif

TIFF* open(Source& src) {
#if TIFFLIB_VERSION >= 20221213
  TIFFOpenOptions* opts = TIFFOpenOptionsAlloc();
  TIFFOpenOptionsSetErrorHandlerExtR(opts, on_error, &src);
  TIFFOpenOptionsSetWarningHandlerExtR(opts, on_warning, &src);
  TIFF* tif = TIFFClientOpenExt("mem", "rm", &src, on_read, on_write, on_seek, on_close, on_size, on_map, on_unmap,
                                opts);
  TIFFOpenOptionsFree(opts);
  return tif;
#else
  return TIFFClientOpen("mem", "rm", &src, on_read, on_write, on_seek, on_close, on_size, on_map, on_unmap);
#endif
}

// 16-bit gray or RGB(A) in contiguous strips: samples, rounded to 8 bits. False when a scanline cannot be read.
bool read_16bit(TIFF* tif, Image& img, int spp) {
  std::vector<uint16_t> line(static_cast<size_t>(TIFFScanlineSize(tif)) / 2 + 1);
  for (int y = 0; y < img.rows; ++y) {
    if (TIFFReadScanline(tif, line.data(), static_cast<uint32_t>(y), 0) < 0) return false;
    uint8_t* dst = img.ptr<uint8_t>(y);
    for (int x = 0; x < img.cols; ++x)
      for (int c = 0; c < img.channels(); ++c) dst[x * img.channels() + c] = to_8bit(line[size_t(x) * spp + c]);
  }
  return true;
}

bool read_rgba(TIFF* tif, Image& img) {
  std::vector<uint32_t> raster(img.total());
  if (!TIFFReadRGBAImageOriented(tif, static_cast<uint32_t>(img.cols), static_cast<uint32_t>(img.rows), raster.data(),
                                 ORIENTATION_TOPLEFT, 0))
    return false;
  for (int y = 0; y < img.rows; ++y) {
    uint8_t* dst = img.ptr<uint8_t>(y);
    const uint32_t* src = raster.data() + static_cast<size_t>(y) * img.cols;
    for (int x = 0; x < img.cols; ++x) {
      if (img.channels() == 1) {
        dst[x] = static_cast<uint8_t>(TIFFGetR(src[x]));
      } else {
        dst[3 * x] = static_cast<uint8_t>(TIFFGetR(src[x]));
        dst[3 * x + 1] = static_cast<uint8_t>(TIFFGetG(src[x]));
        dst[3 * x + 2] = static_cast<uint8_t>(TIFFGetB(src[x]));
      }
    }
  }
  return true;
}

}  // namespace

Image decode_tiff(std::string_view bytes, const std::string& name) {
  Source src;
  src.bytes = bytes;
  TIFF* tif = open(src);
  if (!tif) damaged(name, "libtiff: " + std::string(src.message[0] ? src.message : "cannot open"));
  uint32_t w = 0, h = 0;
  uint16_t bps = 1, spp = 1, photometric = PHOTOMETRIC_MINISBLACK, planar = PLANARCONFIG_CONTIG,
           format = SAMPLEFORMAT_UINT;
  TIFFGetField(tif, TIFFTAG_IMAGEWIDTH, &w);
  TIFFGetField(tif, TIFFTAG_IMAGELENGTH, &h);
  TIFFGetFieldDefaulted(tif, TIFFTAG_BITSPERSAMPLE, &bps);
  TIFFGetFieldDefaulted(tif, TIFFTAG_SAMPLESPERPIXEL, &spp);
  TIFFGetFieldDefaulted(tif, TIFFTAG_PLANARCONFIG, &planar);
  TIFFGetFieldDefaulted(tif, TIFFTAG_SAMPLEFORMAT, &format);
  TIFFGetField(tif, TIFFTAG_PHOTOMETRIC, &photometric);
  const bool gray = photometric == PHOTOMETRIC_MINISBLACK || photometric == PHOTOMETRIC_MINISWHITE;
  std::string why;
  Image img;
  if (w == 0 || h == 0 || w > INT32_MAX || h > INT32_MAX) {
    why = "no image size";
  } else if (format != SAMPLEFORMAT_UINT && format != SAMPLEFORMAT_VOID) {
    why = "signed or floating-point samples are not decoded; convert the image to 8- or 16-bit unsigned (PNG)";
  } else {
    img = Image(static_cast<int>(h), static_cast<int>(w), image_type(kDepth8U, gray ? 1 : 3));
    const bool plain16 = bps == 16 && planar == PLANARCONFIG_CONTIG && !TIFFIsTiled(tif) &&
                         ((photometric == PHOTOMETRIC_MINISBLACK && spp <= 2) ||
                          (photometric == PHOTOMETRIC_RGB && (spp == 3 || spp == 4)));
    char rgba_why[1024] = {};
    if (plain16) {
      if (!read_16bit(tif, img, spp)) why = "libtiff: " + std::string(src.message[0] ? src.message : "read error");
    } else if (!TIFFRGBAImageOK(tif, rgba_why)) {
      why = "an unsupported TIFF layout (" + std::string(rgba_why) + "); convert it to PNG";
    } else if (!read_rgba(tif, img)) {
      why = "libtiff: " + std::string(src.message[0] ? src.message : "read error");
    }
  }
  TIFFClose(tif);
  if (!why.empty()) damaged(name, why);
  return img;
}

#else

bool has_tiff() { return false; }

Image decode_tiff(std::string_view, const std::string& name) {
  fail(name, "a TIFF image, and this kgtrain was built without libtiff (Debian/Ubuntu: apt-get install libtiff-dev, "
             "then rebuild); or convert the images to PNG");
}

#endif

}  // namespace kg::data::codecs
