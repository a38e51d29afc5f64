// PNG through libpng, with the transforms OpenCV's PngDecoder (imgcodecs/src/grfmt_png.cpp) asks for under
// imdecode(IMREAD_ANYCOLOR | IMREAD_ANYDEPTH): gray (any depth, with or without alpha or tRNS) stays gray, palette
// and RGB become RGB, alpha is stripped (not composited), 16-bit samples are rounded to 8 bits afterwards, Adam7 is
// de-interlaced, an eXIf orientation is applied. libpng's errors jump back to run(), which holds no objects with
// destructors; its warnings (a damaged ancillary chunk it skips) are dropped rather than printed.
#include <csetjmp>
#include <cstdio>
#include <cstring>
#include <vector>

#include <png.h>

#include "data/codecs/codecs.h"

namespace kg::data::codecs {
namespace {

struct Job {
  png_structp png = nullptr;
  png_infop info = nullptr, end = nullptr;
  std::string_view bytes;
  size_t at = 0;
  char message[200] = {};
  int orientation = 0;
  Image img;
  std::vector<uint8_t> pixels;  // 16-bit samples before they are brought to 8
  std::vector<png_bytep> rows;
};

[[noreturn]] void on_error(png_structp png, png_const_charp msg) {
  auto* j = static_cast<Job*>(png_get_error_ptr(png));
  std::snprintf(j->message, sizeof j->message, "%s", msg);
  png_longjmp(png, 1);
}

void on_warning(png_structp, png_const_charp) {}

void on_read(png_structp png, png_bytep out, png_size_t n) {
  auto* j = static_cast<Job*>(png_get_io_ptr(png));
  if (n > j->bytes.size() - j->at) png_error(png, "the PNG data ends early: a truncated file");
  std::memcpy(out, j->bytes.data() + j->at, n);
  j->at += n;
}

int read_orientation(Job* j) {
  png_uint_32 n = 0;
  png_bytep exif = nullptr;
#ifdef PNG_eXIf_SUPPORTED
  // The chunk may come before the image data or after it.
  if (png_get_valid(j->png, j->info, PNG_INFO_eXIf))
    png_get_eXIf_1(j->png, j->info, &n, &exif);
  else if (png_get_valid(j->png, j->end, PNG_INFO_eXIf))
    png_get_eXIf_1(j->png, j->end, &n, &exif);
#endif
  return exif && n > 0 ? exif_orientation(exif, n) : 0;
}

bool run(Job* j) {
  if (setjmp(png_jmpbuf(j->png))) return false;
  png_set_read_fn(j->png, j, on_read);
  png_read_info(j->png, j->info);
  const png_uint_32 width = png_get_image_width(j->png, j->info), height = png_get_image_height(j->png, j->info);
  const int depth = png_get_bit_depth(j->png, j->info), color_type = png_get_color_type(j->png, j->info);
  const bool color = (color_type & PNG_COLOR_MASK_COLOR) != 0;
  png_set_strip_alpha(j->png);
  if (color_type == PNG_COLOR_TYPE_PALETTE) png_set_palette_to_rgb(j->png);
  if (!color && depth < 8) png_set_expand_gray_1_2_4_to_8(j->png);
  if (depth == 16) png_set_swap(j->png);  // host-order uint16_t (kgtrain builds on little-endian machines)
  png_set_interlace_handling(j->png);
  png_read_update_info(j->png, j->info);
  const int channels = png_get_channels(j->png, j->info);
  const size_t row_bytes = png_get_rowbytes(j->png, j->info);
  if (channels != (color ? 3 : 1) || row_bytes != size_t{width} * channels * (depth == 16 ? 2 : 1))
    png_error(j->png, "unexpected PNG layout");  // not reachable with libpng's transforms above
  j->img = Image(static_cast<int>(height), static_cast<int>(width), image_type(kDepth8U, channels));
  j->rows.resize(height);
  if (depth == 16) {
    j->pixels.resize(row_bytes * height);
    for (png_uint_32 y = 0; y < height; ++y) j->rows[y] = j->pixels.data() + row_bytes * y;
  } else {
    for (png_uint_32 y = 0; y < height; ++y) j->rows[y] = j->img.ptr<uint8_t>(static_cast<int>(y));
  }
  png_read_image(j->png, j->rows.data());
  png_read_end(j->png, j->end);
  j->orientation = read_orientation(j);
  return true;
}

void narrow_16bit(Job& j) {
  const size_t per_row = static_cast<size_t>(j.img.cols) * j.img.channels();
  for (int y = 0; y < j.img.rows; ++y) {
    const uint8_t* src = j.rows[static_cast<size_t>(y)];
    uint8_t* dst = j.img.ptr<uint8_t>(y);
    for (size_t i = 0; i < per_row; ++i) {
      uint16_t v;
      std::memcpy(&v, src + 2 * i, 2);
      dst[i] = to_8bit(v);
    }
  }
}

}  // namespace

Image decode_png(std::string_view bytes, const std::string& name) {
  Job job;
  job.bytes = bytes;
  job.png = png_create_read_struct(PNG_LIBPNG_VER_STRING, &job, on_error, on_warning);
  if (job.png) job.info = png_create_info_struct(job.png);
  if (job.info) job.end = png_create_info_struct(job.png);
  const bool ok = job.end != nullptr && run(&job);
  const bool wide = ok && !job.pixels.empty();
  if (wide) narrow_16bit(job);
  png_destroy_read_struct(&job.png, &job.info, &job.end);
  if (!ok) damaged(name, job.message[0] ? "libpng: " + std::string(job.message) : "libpng: out of memory");
  return apply_orientation(job.img, job.orientation);
}

}  // namespace kg::data::codecs
