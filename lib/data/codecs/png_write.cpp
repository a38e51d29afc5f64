// PNG encoding through libpng with the settings kgtrain's charts and packs were always written with (OpenCV's
// PngEncoder at IMWRITE_PNG_COMPRESSION = 1: zlib level 1, default strategy and memory level, libpng's adaptive
// filters), so the bytes stay what they were (tests/data/test_codecs_vs_opencv.cpp compares them with imencode's):
// the same pixels always give the same bytes.
#include <csetjmp>
#include <cstdio>
#include <vector>

#include <png.h>

#include "core/error.h"
#include "data/codecs/codecs.h"

namespace kg::data::codecs {
namespace {

struct Job {
  png_structp png = nullptr;
  png_infop info = nullptr;
  const Image* img = nullptr;
  std::string* out = nullptr;
  std::vector<png_bytep> rows;
  char message[200] = {};
};

[[noreturn]] void on_error(png_structp png, png_const_charp msg) {
  auto* j = static_cast<Job*>(png_get_error_ptr(png));
  std::snprintf(j->message, sizeof j->message, "%s", msg);
  png_longjmp(png, 1);
}
void on_warning(png_structp, png_const_charp) {}
void on_write(png_structp png, png_bytep data, png_size_t n) {
  static_cast<Job*>(png_get_io_ptr(png))->out->append(reinterpret_cast<const char*>(data), n);
}
void on_flush(png_structp) {}

bool run(Job* j) {
  if (setjmp(png_jmpbuf(j->png))) return false;
  png_set_write_fn(j->png, j, on_write, on_flush);
  const Image& img = *j->img;
  png_set_IHDR(j->png, j->info, static_cast<png_uint_32>(img.cols), static_cast<png_uint_32>(img.rows), 8,
               img.channels() == 3 ? PNG_COLOR_TYPE_RGB : PNG_COLOR_TYPE_GRAY, PNG_INTERLACE_NONE,
               PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
  png_set_compression_strategy(j->png, 0);  // Z_DEFAULT_STRATEGY
  png_set_compression_level(j->png, 1);
  png_write_info(j->png, j->info);
  png_write_image(j->png, j->rows.data());
  png_write_end(j->png, j->info);
  return true;
}

}  // namespace

void encode_png(const Image& img, std::string& out) {
  KG_ASSERT(img.depth() == kDepth8U && (img.channels() == 1 || img.channels() == 3),
            "encode_png wants 8-bit gray or RGB, got type ", img.type());
  Job job;
  job.img = &img;
  job.out = &out;
  out.clear();
  for (int y = 0; y < img.rows; ++y) job.rows.push_back(const_cast<png_bytep>(img.ptr<uint8_t>(y)));
  job.png = png_create_write_struct(PNG_LIBPNG_VER_STRING, &job, on_error, on_warning);
  if (job.png) job.info = png_create_info_struct(job.png);
  const bool ok = job.info && run(&job);
  png_destroy_write_struct(&job.png, &job.info);
  KG_CHECK(ok, DataError, "cannot encode a ", img.cols, "x", img.rows, " PNG (libpng: ",
           job.message[0] ? job.message : "out of memory", ")");
}

}  // namespace kg::data::codecs
