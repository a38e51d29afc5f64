// JPEG and PNG fixtures through libjpeg-turbo and libpng (see encode.h). Each library's error exit jumps back to a
// function that holds only plain data, as lib/data/codecs does; a failure is a test failure (std::runtime_error).
#include "support/encode.h"

#include <csetjmp>
#include <cstdio>
#include <stdexcept>

#include <jpeglib.h>
#include <png.h>
#include <zlib.h>

namespace kg::test {
namespace {

struct JpegJob {
  jpeg_compress_struct c{};
  jpeg_error_mgr err{};
  std::jmp_buf jump;
  unsigned char* out = nullptr;
  unsigned long size = 0;
  const cv::Mat* m = nullptr;
  const JpegOptions* o = nullptr;
};

[[noreturn]] void jpeg_fail(j_common_ptr c) { std::longjmp(static_cast<JpegJob*>(c->client_data)->jump, 1); }

bool jpeg_run(JpegJob* j) {
  if (setjmp(j->jump)) return false;
  jpeg_compress_struct* c = &j->c;
  jpeg_mem_dest(c, &j->out, &j->size);
  c->image_width = static_cast<JDIMENSION>(j->m->cols);
  c->image_height = static_cast<JDIMENSION>(j->m->rows);
  c->input_components = j->m->channels();
  c->in_color_space = j->m->channels() == 1 ? JCS_GRAYSCALE : j->o->cmyk ? JCS_CMYK : JCS_RGB;
  jpeg_set_defaults(c);
  if (j->o->cmyk) jpeg_set_colorspace(c, j->o->ycck ? JCS_YCCK : JCS_CMYK);
  jpeg_set_quality(c, j->o->quality, TRUE);
  if (j->m->channels() == 3) {
    c->comp_info[0].h_samp_factor = j->o->sampling == 444 ? 1 : 2;
    c->comp_info[0].v_samp_factor = j->o->sampling == 420 ? 2 : 1;
  }
  if (j->o->progressive) jpeg_simple_progression(c);
  jpeg_start_compress(c, TRUE);
  for (int y = 0; y < j->m->rows; ++y) {
    JSAMPROW row = const_cast<JSAMPROW>(j->m->ptr<uint8_t>(y));
    jpeg_write_scanlines(c, &row, 1);
  }
  jpeg_finish_compress(c);
  return true;
}

struct PngJob {
  png_structp png = nullptr;
  png_infop info = nullptr;
  std::string out;
  std::vector<png_bytep> rows;
  int width = 0, height = 0, depth = 8, color_type = 0;
  bool interlace = false, swap = false;
  std::vector<png_color> palette;
  std::vector<png_byte> alpha;
  int trns_gray = -1;
};

[[noreturn]] void png_fail(png_structp png, png_const_charp) { png_longjmp(png, 1); }
void png_quiet(png_structp, png_const_charp) {}
void png_put(png_structp png, png_bytep data, png_size_t n) {
  static_cast<PngJob*>(png_get_io_ptr(png))->out.append(reinterpret_cast<const char*>(data), n);
}
void png_flush_nothing(png_structp) {}

bool png_run(PngJob* j) {
  if (setjmp(png_jmpbuf(j->png))) return false;
  png_set_write_fn(j->png, j, png_put, png_flush_nothing);
  png_set_IHDR(j->png, j->info, static_cast<png_uint_32>(j->width), static_cast<png_uint_32>(j->height), j->depth,
               j->color_type, j->interlace ? PNG_INTERLACE_ADAM7 : PNG_INTERLACE_NONE, PNG_COMPRESSION_TYPE_DEFAULT,
               PNG_FILTER_TYPE_DEFAULT);
  if (!j->palette.empty())
    png_set_PLTE(j->png, j->info, j->palette.data(), static_cast<int>(j->palette.size()));
  if (!j->alpha.empty()) png_set_tRNS(j->png, j->info, j->alpha.data(), static_cast<int>(j->alpha.size()), nullptr);
  png_color_16 gray_key{};
  gray_key.gray = static_cast<png_uint_16>(j->trns_gray);
  if (j->trns_gray >= 0) png_set_tRNS(j->png, j->info, nullptr, 0, &gray_key);
  png_write_info(j->png, j->info);
  if (j->depth < 8) png_set_packing(j->png);
  if (j->swap) png_set_swap(j->png);
  if (j->interlace) png_set_interlace_handling(j->png);
  png_write_image(j->png, j->rows.data());
  png_write_end(j->png, j->info);
  return true;
}

std::string png_write(PngJob& j, const cv::Mat& m) {
  j.width = m.cols;
  j.height = m.rows;
  for (int y = 0; y < m.rows; ++y) j.rows.push_back(const_cast<png_bytep>(m.ptr<uint8_t>(y)));
  j.png = png_create_write_struct(PNG_LIBPNG_VER_STRING, nullptr, png_fail, png_quiet);
  j.info = png_create_info_struct(j.png);
  const bool ok = png_run(&j);
  png_destroy_write_struct(&j.png, &j.info);
  if (!ok) throw std::runtime_error("test PNG encoder failed");
  return j.out;
}

}  // namespace

std::string encode_jpeg(const cv::Mat& m, const JpegOptions& o) {
  if (m.depth() != CV_8U || (m.channels() != (o.cmyk ? 4 : 1) && m.channels() != 3))
    throw std::runtime_error("encode_jpeg: 8-bit gray, RGB or CMYK pixels");
  JpegJob j;
  j.m = &m;
  j.o = &o;
  j.c.err = jpeg_std_error(&j.err);
  j.err.error_exit = jpeg_fail;
  j.c.client_data = &j;
  jpeg_create_compress(&j.c);
  const bool ok = jpeg_run(&j);
  jpeg_destroy_compress(&j.c);
  std::string out = ok ? std::string(reinterpret_cast<const char*>(j.out), j.size) : "";
  std::free(j.out);
  if (!ok) throw std::runtime_error("test JPEG encoder failed");
  return out;
}

std::string with_exif_orientation(const std::string& jpeg, int orientation) {
  const std::string tiff = std::string("MM\0\x2a\0\0\0\x08\0\x01\x01\x12\0\x03\0\0\0\x01\0", 19) +
                           static_cast<char>(orientation) + std::string(6, '\0');
  const std::string body = std::string("Exif\0\0", 6) + tiff;
  const size_t len = body.size() + 2;
  const std::string seg = std::string("\xFF\xE1") + static_cast<char>(len >> 8) + static_cast<char>(len & 0xFF);
  return jpeg.substr(0, 2) + seg + body + jpeg.substr(2);
}

std::string with_png_exif_orientation(const std::string& png, int orientation) {
  const std::string exif = std::string("MM\0\x2a\0\0\0\x08\0\x01\x01\x12\0\x03\0\0\0\x01\0", 19) +
                           static_cast<char>(orientation) + std::string(6, '\0');
  std::string chunk = std::string("\0\0\0", 3) + static_cast<char>(exif.size()) + "eXIf" + exif;
  const uLong crc = crc32(0, reinterpret_cast<const Bytef*>(chunk.data() + 4), static_cast<uInt>(4 + exif.size()));
  for (int shift = 24; shift >= 0; shift -= 8) chunk += static_cast<char>((crc >> shift) & 0xFF);
  return png.substr(0, 8 + 25) + chunk + png.substr(8 + 25);  // after the signature and IHDR
}

std::string encode_png(const cv::Mat& m, bool interlace) {
  static const int kTypes[] = {PNG_COLOR_TYPE_GRAY, PNG_COLOR_TYPE_GRAY_ALPHA, PNG_COLOR_TYPE_RGB,
                               PNG_COLOR_TYPE_RGB_ALPHA};
  PngJob j;
  j.depth = m.depth() == CV_16U ? 16 : 8;
  j.swap = j.depth == 16;  // host-order samples; PNG's are big-endian
  j.color_type = kTypes[m.channels() - 1];
  j.interlace = interlace;
  return png_write(j, m);
}

std::string encode_png_palette(const cv::Mat& indices, const std::vector<uint8_t>& palette,
                               const std::vector<uint8_t>& alpha, int bit_depth) {
  PngJob j;
  j.depth = bit_depth;
  j.color_type = PNG_COLOR_TYPE_PALETTE;
  for (size_t i = 0; i + 2 < palette.size(); i += 3) j.palette.push_back({palette[i], palette[i + 1], palette[i + 2]});
  j.alpha = alpha;
  return png_write(j, indices);
}

std::string encode_png_gray(const cv::Mat& gray, int bit_depth, int trns) {
  PngJob j;
  j.depth = bit_depth;
  j.color_type = PNG_COLOR_TYPE_GRAY;
  j.trns_gray = trns;
  return png_write(j, gray);
}

}  // namespace kg::test
