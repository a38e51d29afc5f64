// One window of a JPEG decoded at the smallest M/8 scale (M = 1..8) that keeps it at least the size the
// pipeline needs, with libjpeg-turbo directly: the scaled IDCT (DCT-domain downscaling) skips most of the
// arithmetic, jpeg_skip_scanlines the rows above the window, jpeg_crop_scanline the columns beside it (on iMCU
// boundaries). random_resized_crop's small crops of a large photo then cost a fraction of a full decode plus
// an area resize. OpenCV's IMREAD_REDUCED_* offers only 1/2, 1/4, 1/8 of the whole image.
#pragma once
#include <optional>
#include <string_view>

#include "data/image.h"

namespace kg::data {

// `img` is pixels (x, y) .. (x + cols, y + rows) of the JPEG scaled by (sx, sy).
struct JpegWindow {
  Image img;
  double sx = 1, sy = 1;
  int x = 0, y = 0;
};

// Whether this build decodes windows (KG_WITH_LIBJPEG: libjpeg-turbo >= 1.5 found at configure time).
bool can_decode_jpeg_windows();

// The smallest M in 1..8 for which `win` scaled by M/8 is at least min_w x min_h (8 when none is).
int jpeg_scale_for(const Window& win, int min_w, int min_h);

// `win` (pixels of the full-size image) of the JPEG `bytes`, decoded at scale_num/8 into 8-bit gray (channels 1)
// or RGB (3): scale_window(win, sx, sy, ...) of the scaled image. nullopt, never an exception, where this path
// does not apply or libjpeg reports anything (no libjpeg in this build, CMYK/YCCK, a corrupt or truncated file,
// even a warning): the caller decodes the whole file instead, whose decoder says what is wrong.
std::optional<JpegWindow> decode_jpeg_window(std::string_view bytes, int channels, const Window& win, int scale_num);

}  // namespace kg::data
