// Small synthetic images for transform and pipeline tests.
#pragma once
#include <cstdint>

#include <opencv2/core.hpp>

namespace kg::test {

// A smooth 8-bit ramp: pixel (y, x, k) = 10 x + y + 50 k (mod 256).
inline cv::Mat ramp(int h, int w, int c) {
  cv::Mat m(h, w, CV_8UC(c));
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x)
      for (int k = 0; k < c; ++k) m.ptr<uint8_t>(y)[x * c + k] = static_cast<uint8_t>(10 * x + y + 50 * k);
  return m;
}

}  // namespace kg::test
