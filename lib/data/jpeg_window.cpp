#include "data/jpeg_window.h"

#include <algorithm>
#include <cmath>
#include <cstdio>  // jpeglib.h needs FILE
#include <vector>

#if KG_WITH_LIBJPEG
#include <jpeglib.h>

#include "data/codecs/jpeg_errors.h"
#endif

namespace kg::data {

int jpeg_scale_for(const Window& win, int min_w, int min_h) {
  for (int m = 1; m < 8; ++m)
    if (static_cast<int64_t>(win.w) * m >= 8LL * min_w && static_cast<int64_t>(win.h) * m >= 8LL * min_h) return m;
  return 8;
}

#if KG_WITH_LIBJPEG

bool can_decode_jpeg_windows() { return true; }

namespace {

// Everything run() touches lives here, in memory the longjmp cannot roll back; run() itself holds no objects
// with destructors.
struct Job {
  jpeg_decompress_struct cinfo{};
  codecs::JpegErrors err{};
  std::string_view bytes;
  int channels = 3, scale_num = 8;
  Window win;
  JpegWindow out;
  std::vector<JSAMPLE> row;
};

bool run(Job* j) {
  jpeg_decompress_struct* c = &j->cinfo;
  if (setjmp(j->err.jump)) return false;
  jpeg_mem_src(c, reinterpret_cast<const unsigned char*>(j->bytes.data()), static_cast<unsigned long>(j->bytes.size()));
  jpeg_read_header(c, TRUE);
  if (c->num_components != 1 && c->num_components != 3) return false;  // CMYK, YCCK: OpenCV converts them
  c->out_color_space = j->channels == 1 ? JCS_GRAYSCALE : JCS_RGB;
  c->scale_num = static_cast<unsigned>(j->scale_num);
  c->scale_denom = 8;
  jpeg_start_decompress(c);
  const int cols = static_cast<int>(c->output_width), rows = static_cast<int>(c->output_height);
  JpegWindow& o = j->out;
  o.sx = static_cast<double>(cols) / c->image_width;
  o.sy = static_cast<double>(rows) / c->image_height;
  const Window s = scale_window(j->win, o.sx, o.sy, cols, rows);
  // One pixel more on each side: libjpeg widens the request to iMCU boundaries, and the column at a cropped
  // edge is upsampled from its own chroma only, so the window's own columns must not sit on that edge.
  const int left = std::max(s.x - 1, 0), right = std::min(s.x + s.w + 1, cols);
  JDIMENSION xoff = static_cast<JDIMENSION>(left), width = static_cast<JDIMENSION>(right - left);
  if (right - left < cols) jpeg_crop_scanline(c, &xoff, &width);  // xoff <= left, xoff + width >= right
  if (s.y > 0 && jpeg_skip_scanlines(c, static_cast<JDIMENSION>(s.y)) != static_cast<JDIMENSION>(s.y)) return false;
  const size_t pixel = static_cast<size_t>(j->channels);
  j->row.resize(static_cast<size_t>(c->output_width) * pixel);
  o.img = Image(s.h, s.w, image_type(kDepth8U, j->channels));
  o.x = s.x;
  o.y = s.y;
  const size_t skip = (static_cast<size_t>(s.x) - xoff) * pixel;
  for (int y = 0; y < s.h; ++y) {
    JSAMPROW line = j->row.data();
    if (jpeg_read_scanlines(c, &line, 1) != 1) return false;
    std::copy_n(j->row.data() + skip, static_cast<size_t>(s.w) * pixel, o.img.ptr<uint8_t>(y));
  }
  return true;
}

}  // namespace

std::optional<JpegWindow> decode_jpeg_window(std::string_view bytes, int channels, const Window& win, int scale_num) {
  if ((channels != 1 && channels != 3) || scale_num < 1 || scale_num > 8 || win.w <= 0 || win.h <= 0 ||
      bytes.size() < 4)
    return std::nullopt;
  Job job;
  job.bytes = bytes;
  job.channels = channels;
  job.scale_num = scale_num;
  job.win = win;
  // Warnings (corrupt data libjpeg would paper over) fail too: the whole-file decoder then handles the file.
  codecs::install_jpeg_errors(&job.cinfo, &job.err, /*warnings_fail=*/true);
  jpeg_create_decompress(&job.cinfo);
  const bool ok = run(&job);
  jpeg_destroy_decompress(&job.cinfo);  // frees libjpeg's memory in every state, after an error too
  if (!ok) return std::nullopt;
  return std::move(job.out);
}

#else

bool can_decode_jpeg_windows() { return false; }

std::optional<JpegWindow> decode_jpeg_window(std::string_view, int, const Window&, int) { return std::nullopt; }

#endif

}  // namespace kg::data
