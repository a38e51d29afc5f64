// JPEG through libjpeg-turbo, with the choices OpenCV's JpegDecoder (imgcodecs/src/grfmt_jpeg.cpp) makes for
// imdecode(IMREAD_ANYCOLOR) and IMREAD_REDUCED_COLOR_N, so the pixels are the ones kgtrain always trained on:
// gray files stay gray (reduced: RGB), CMYK and YCCK (libjpeg turns YCCK into CMYK) become RGB by OpenCV's formula,
// the first APP1 segment's EXIF orientation is applied. libjpeg's error exit jumps back to run(), which holds no
// objects with destructors (codecs/jpeg_errors.h); warnings are silent, except running out of data.
#include <cstdio>  // jpeglib.h needs FILE
#include <vector>

#include <jpeglib.h>
#include <jerror.h>

#include "data/codecs/codecs.h"
#include "data/codecs/jpeg_errors.h"

namespace kg::data::codecs {
namespace {

// OpenCV's icvCvt_CMYK2BGR_8u_C4C3R, written to RGB.
void cmyk_to_rgb(const uint8_t* cmyk, uint8_t* rgb, int width) {
  for (int i = 0; i < width; ++i, cmyk += 4, rgb += 3) {
    const int k = cmyk[3];
    for (int ch = 0; ch < 3; ++ch) rgb[ch] = static_cast<uint8_t>(k - ((255 - cmyk[ch]) * k >> 8));
  }
}

struct Job {
  jpeg_decompress_struct cinfo{};
  JpegErrors err{};
  std::string_view bytes;
  int reduce = 1;
  int orientation = 0;
  Image img;
  std::vector<JSAMPLE> row;
};

bool run(Job* j) {
  jpeg_decompress_struct* c = &j->cinfo;
  if (setjmp(j->err.jump)) return false;
  jpeg_mem_src(c, reinterpret_cast<const unsigned char*>(j->bytes.data()), static_cast<unsigned long>(j->bytes.size()));
  jpeg_save_markers(c, JPEG_APP0 + 1, 0xFFFF);
  jpeg_read_header(c, TRUE);
  const bool cmyk = c->num_components == 4;
  const bool color = j->reduce > 1 || c->num_components > 1;
  c->out_color_space = cmyk ? JCS_CMYK : color ? JCS_RGB : JCS_GRAYSCALE;
  if (j->reduce > 1) {
    c->scale_num = 1;
    c->scale_denom = static_cast<unsigned>(j->reduce);
  }
  for (jpeg_saved_marker_ptr m = c->marker_list; m; m = m->next) {
    if (m->marker != JPEG_APP0 + 1) continue;
    if (m->data_length > 6) j->orientation = exif_orientation(m->data + 6, m->data_length - 6);  // after "Exif\0\0"
    break;
  }
  jpeg_start_decompress(c);
  const int cols = static_cast<int>(c->output_width), rows = static_cast<int>(c->output_height);
  j->img = Image(rows, cols, image_type(kDepth8U, color ? 3 : 1));
  if (cmyk) j->row.resize(static_cast<size_t>(cols) * 4);
  for (int y = 0; y < rows; ++y) {
    JSAMPROW line = cmyk ? j->row.data() : j->img.ptr<uint8_t>(y);  // gray and RGB straight into the image
    if (jpeg_read_scanlines(c, &line, 1) != 1) return false;
    if (cmyk) cmyk_to_rgb(j->row.data(), j->img.ptr<uint8_t>(y), cols);
  }
  return true;
}

}  // namespace

Image decode_jpeg(std::string_view bytes, const std::string& name, int reduce) {
  Job job;
  job.bytes = bytes;
  job.reduce = reduce;
  // Corrupt-data warnings (extraneous bytes, a bad Huffman code) are what libjpeg papers over and OpenCV decoded
  // anyway; a file that ends early is refused, as PIL refuses it.
  install_jpeg_errors(&job.cinfo, &job.err, /*warnings_fail=*/false);
  jpeg_create_decompress(&job.cinfo);
  const bool ok = run(&job);
  jpeg_destroy_decompress(&job.cinfo);  // frees libjpeg's memory in every state, after an error too
  if (!ok) damaged(name, job.err.message[0] ? "libjpeg: " + std::string(job.err.message) : "libjpeg stopped early");
  if (job.err.truncated) damaged(name, "the JPEG data ends early: a truncated file");
  return apply_orientation(job.img, job.orientation);
}

}  // namespace kg::data::codecs
