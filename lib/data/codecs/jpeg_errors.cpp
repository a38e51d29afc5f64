#include <cstdio>  // jpeglib.h needs FILE

#include <jpeglib.h>
#include <jerror.h>

#include "data/codecs/jpeg_errors.h"

namespace kg::data::codecs {
namespace {

[[noreturn]] void on_error(j_common_ptr c) {
  auto* e = reinterpret_cast<JpegErrors*>(c->err);
  c->err->format_message(c, e->message);
  std::longjmp(e->jump, 1);
}

void on_message(j_common_ptr c, int level) {
  if (level >= 0) return;  // trace messages
  auto* e = reinterpret_cast<JpegErrors*>(c->err);
  if (e->warnings_fail) on_error(c);
  if (c->err->msg_code == JWRN_JPEG_EOF) e->truncated = true;
}

}  // namespace

void install_jpeg_errors(jpeg_decompress_struct* cinfo, JpegErrors* e, bool warnings_fail) {
  cinfo->err = jpeg_std_error(&e->pub);
  e->pub.error_exit = on_error;
  e->pub.emit_message = on_message;
  e->message[0] = '\0';
  e->truncated = false;
  e->warnings_fail = warnings_fail;
}

}  // namespace kg::data::codecs
