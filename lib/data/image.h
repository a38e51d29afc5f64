// The host pipeline's image: 8-bit or float samples, rows x cols x channels (HWC), RGB order.
//
// With OpenCV (the normal build) it is cv::Mat, and the transforms that compute pixels (resizing,
// warps, blur, colour) call OpenCV on it. A build without OpenCV (a GPU machine that has only PyTorch)
// gets a small stand-in with the members the rest of kgtrain uses: it holds decoded or packed pixels,
// the flips and crops move them, normalize scales them; the transforms that need OpenCV are not built
// there and recipes that name them get a ConfigError saying so.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <memory>

#if KG_WITH_OPENCV
#include <opencv2/core/mat.hpp>

namespace kg::data {
using Image = cv::Mat;
inline constexpr int kDepth8U = CV_8U;
inline constexpr int kDepth32F = CV_32F;
inline int image_type(int depth, int channels) { return CV_MAKETYPE(depth, channels); }
}  // namespace kg::data

#else

namespace kg::data {
inline constexpr int kDepth8U = 0;                                                        // OpenCV's CV_8U
inline constexpr int kDepth32F = 5;                                                       // OpenCV's CV_32F
inline int image_type(int depth, int channels) { return depth + ((channels - 1) << 3); }  // CV_MAKETYPE

class Image {
 public:
  int rows = 0, cols = 0;
  uint8_t* data = nullptr;

  Image() = default;
  // rows x cols of `type` (image_type), zero-filled.
  Image(int rows, int cols, int type) : rows(rows), cols(cols), type_(type) {
    step_ = static_cast<size_t>(cols) * elemSize();
    owner_.reset(new uint8_t[step_ * static_cast<size_t>(rows)](), std::default_delete<uint8_t[]>());
    data = owner_.get();
  }
  // A view of pixels owned elsewhere (rows `step` bytes apart; 0 = packed).
  Image(int rows, int cols, int type, void* pixels, size_t step = 0)
      : rows(rows), cols(cols), data(static_cast<uint8_t*>(pixels)), type_(type) {
    step_ = step ? step : static_cast<size_t>(cols) * elemSize();
  }

  int type() const { return type_; }
  int depth() const { return type_ & 7; }
  int channels() const { return (type_ >> 3) + 1; }
  size_t elemSize() const { return static_cast<size_t>(channels()) * (depth() == kDepth32F ? 4 : 1); }
  size_t total() const { return static_cast<size_t>(rows) * static_cast<size_t>(cols); }
  bool empty() const { return data == nullptr || rows == 0 || cols == 0; }
  bool isContinuous() const { return step_ == static_cast<size_t>(cols) * elemSize() || rows == 1; }

  template <class T = uint8_t>
  T* ptr(int y) {
    return reinterpret_cast<T*>(data + static_cast<size_t>(y) * step_);
  }
  template <class T = uint8_t>
  const T* ptr(int y) const {
    return reinterpret_cast<const T*>(data + static_cast<size_t>(y) * step_);
  }
  // A packed copy that owns its pixels.
  Image clone() const {
    if (empty()) return Image();
    Image out(rows, cols, type_);
    const size_t row = static_cast<size_t>(cols) * elemSize();
    for (int y = 0; y < rows; ++y) std::copy(ptr(y), ptr(y) + row, out.ptr(y));
    return out;
  }

 private:
  int type_ = 0;
  size_t step_ = 0;
  std::shared_ptr<uint8_t> owner_;
};
}  // namespace kg::data

#endif

namespace kg::data {

// A window of an image in pixels (x, y: top-left).
struct Window {
  int x = 0, y = 0, w = 0, h = 0;
};

// `win` of an image mapped onto the same image scaled by (sx, sy) to cols x rows: outward to whole pixels, inside
// the image, at least 1 x 1. The reduced JPEG decoders and random_resized_crop agree on it through this function.
inline Window scale_window(const Window& win, double sx, double sy, int cols, int rows) {
  const int x0 = std::clamp(static_cast<int>(std::floor(win.x * sx)), 0, cols - 1);
  const int y0 = std::clamp(static_cast<int>(std::floor(win.y * sy)), 0, rows - 1);
  const int x1 = std::clamp(static_cast<int>(std::ceil((win.x + win.w) * sx)), x0 + 1, cols);
  const int y1 = std::clamp(static_cast<int>(std::ceil((win.y + win.h) * sy)), y0 + 1, rows);
  return {x0, y0, x1 - x0, y1 - y0};
}

}  // namespace kg::data
