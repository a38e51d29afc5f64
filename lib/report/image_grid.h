// Image grids as PNG, drawn with OpenCV: show-batch's augmented samples with their (soft) labels, the
// TensorBoard sample image, interpret's top losses and Grad-CAM overlays. Small images are enlarged with
// nearest-neighbour (pixels stay visible) to at least GridOptions::min_tile; each tile gets caption lines
// under it. Deterministic: the same tiles give the same bytes.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "report/plot.h"

namespace kg::report {

struct Tile {
  std::vector<uint8_t> pixels;  // height x width x channels, row-major; channels 1 (gray) or 3 (RGB)
  int height = 0, width = 0, channels = 1;
  std::vector<std::string> caption;  // lines under the image
  Rgb caption_color{0, 0, 0};        // e.g. red for a wrong prediction
};

struct GridOptions {
  int columns = 8;
  int min_tile = 112;  // images smaller than this are enlarged by an integer factor to reach it
  std::string title;   // a line above the grid ("" = none)
};

// The grid as PNG bytes; `height`/`width` (when given) receive its size. DataError in a build without
// OpenCV, or for a tile whose pixels do not match its size.
std::string grid_png(const std::vector<Tile>& tiles, const GridOptions& o, int* height = nullptr, int* width = nullptr);

}  // namespace kg::report
