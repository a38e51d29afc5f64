// libjpeg's error handling, shared by the whole-file decoder (codecs/jpeg.cpp) and the window decoder
// (data/jpeg_window.cpp). libjpeg reports an error through a callback that must not return: it jumps back to the
// setjmp of the caller's run(), which holds no objects with destructors. Include after <jpeglib.h>.
#pragma once
#include <csetjmp>

namespace kg::data::codecs {

struct JpegErrors {
  jpeg_error_mgr pub;
  std::jmp_buf jump;
  char message[JMSG_LENGTH_MAX];
  bool truncated;      // a warning said the data ends early (JWRN_JPEG_EOF)
  bool warnings_fail;  // any warning jumps too, as an error does
};

// Points cinfo at e: errors jump to e->jump with e->message set; warnings (corrupt data libjpeg would paper over)
// jump when warnings_fail, and otherwise are silent except for a truncation, which sets e->truncated.
void install_jpeg_errors(jpeg_decompress_struct* cinfo, JpegErrors* e, bool warnings_fail);

}  // namespace kg::data::codecs
