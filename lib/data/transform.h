// Per-image transforms on 8-bit or float HWC images (RGB order), and the pipeline that turns an
// image into a CHW float tensor. Randomness comes from the caller's Rng, seeded per (seed, epoch, sample).
#pragma once
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "data/image.h"

#include "config/registry.h"
#include "config/tree.h"
#include "core/random.h"
#include "data/options.h"

namespace kg::data {

class Transform {
 public:
  virtual ~Transform() = default;
  virtual void apply(Image& img, Rng& rng) const = 0;
  // Random transforms are training-only; evaluation keeps the deterministic ones (normalize, ...).
  virtual bool random() const = 0;
  // True for transforms that produce data.image_size themselves (resize, center_crop,
  // random_resized_crop): the pipeline then hands them the decoded image at its own size instead of
  // resizing it first. Transforms before the first such one also see the original size.
  virtual bool sizes_output() const { return false; }
  // normalize reports its per-channel statistics so the pipeline can leave it to the device.
  virtual bool normalization(std::vector<double>& mean, std::vector<double>& std) const { return false; }
  // Transforms that only move pixels (pad_crop, hflip, vflip) also run on a whole batch on the device
  // (data.cache = "device"): given an h x w input, they draw from `rng` exactly what apply() draws and
  // fill, for each output row / column, the input row / column it reads (-1: the constant fill, 0).
  // Output size = input size. False (the default) for transforms without a device version.
  virtual bool has_index_map() const { return false; }
  virtual void index_map(Rng& rng, int64_t h, int64_t w, std::vector<int64_t>& ys, std::vector<int64_t>& xs) const {}
  // Transforms that read one window of their input and size the output (random_resized_crop): the
  // window of an h x w input, drawing from `rng` exactly what apply() draws, and apply() given that
  // window on an input scaled by (sx, sy) (a JPEG decoded at M/8: Pipeline::process_encoded) whose pixel (0, 0) is
  // pixel (ox, oy) of the scaled image (a decoder that decoded only the window).
  virtual bool plans_window() const { return false; }
  virtual Window plan_window(int h, int w, Rng& rng) const { return {0, 0, w, h}; }
  virtual void apply_window(Image& img, const Window& win, double sx, double sy, int ox = 0, int oy = 0) const {}
};
using TransformPtr = std::unique_ptr<Transform>;

// The random stream of one sample's augmentation in one epoch: the same whichever thread, batch or
// device (data.cache = "device") transforms it.
inline Rng sample_rng(uint64_t seed, int64_t epoch, int64_t row) {
  return Rng(stream_seed(seed, static_cast<uint64_t>(epoch), static_cast<uint64_t>(row), 0xA06ULL));
}

using TransformRegistry = Registry<TransformPtr(const ImageGeometry&)>;

// Resizes to g's height x width (area when shrinking, linear when growing); no-op at that size.
// Without OpenCV: a DataError when the size differs.
void resize_to(Image& img, const ImageGeometry& g);
// t's index map applied on the host, into a new image of the same size: out(y, x) = img(ys[y], xs[x]),
// 0 where an index is -1. Draws from `rng` what t.apply() draws: the pixel moves of the flips and
// pad_crop in a build without OpenCV.
void apply_index_map(const Transform& t, Image& img, Rng& rng);
TransformRegistry& transform_registry();

// A transform file that computes new pixels with OpenCV says so once, at file scope, naming what it registers:
//   KG_TRANSFORMS_NEED_OPENCV("affine", "rotate");
// CMake reads these lines (a build without OpenCV leaves the file out, and its names are refused in a recipe with the
// reason) and writes every transform's name into generated/transform_names.h; tests/data/test_transform_names.cpp
// checks the registry and the docs against them.
#define KG_TRANSFORMS_NEED_OPENCV(...) \
  static_assert(KG_WITH_OPENCV, "a file marked KG_TRANSFORMS_NEED_OPENCV is compiled only with OpenCV")

class Pipeline {
 public:
  // `augment` is the data.augment array; `train` false keeps only deterministic transforms.
  // With `defer_normalize` (data.uint8_transfer) a final normalize is left out and reported by
  // device_normalization(): batches stay uint8 and are normalized on the device (timm's PrefetchLoader).
  // `reduced_decode` (data.reduced_decode): process_encoded may decode only a JPEG's crop window, scaled.
  Pipeline(const config::json& augment, const ImageGeometry& g, bool train, bool defer_normalize = false,
           bool reduced_decode = true);
  // Resizes and transforms a decoded 8-bit image and writes CHW floats to `out`. Unless a transform sizes the output
  // itself, the image is first resized to data.image_size; whatever size the transforms leave is resized to it last.
  void process(Image img, Rng& rng, float* out) const;
  // The same into uint8 CHW (defer_normalize pipelines); DataError when a transform produced floats.
  void process_u8(Image img, Rng& rng, uint8_t* out) const;
  // Whether process_encoded can decode a JPEG reduced: data.reduced_decode and a first transform that plans its
  // window (random_resized_crop), nothing resizing before it.
  bool decodes_reduced() const {
    return reduced_ && !presize_ && !transforms_.empty() && transforms_[0]->plans_window();
  }
  // Decodes an encoded image and processes it as process / process_u8 (u8 when `out8`): the first transform's
  // window is drawn on the JPEG header's size, and only that window is decoded, at the smallest M/8 scale that
  // leaves it at least data.image_size (decode_jpeg_window; without libjpeg, OpenCV's whole file at 1/2, 1/4, 1/8).
  // Not a JPEG, or one with EXIF: decoded in full, the same window. `max_pixels`: data.max_image_pixels.
  void process_encoded(std::string_view bytes, const std::string& name, int channels, int64_t max_pixels, Rng& rng,
                       float* out, uint8_t* out8 = nullptr) const;
  bool outputs_u8() const { return defer_normalize_; }
  // Mean and std of the deferred normalize, [0, 1] units, one per channel (empty: scale to [0, 1] only).
  const std::vector<double>& device_mean() const { return mean_; }
  const std::vector<double>& device_std() const { return std_; }
  const ImageGeometry& geometry() const { return g_; }
  // The normalization samples leave with, [0, 1] units per channel: the final normalize (fused into the
  // write, or deferred to the device) or, failing that, the last normalize in the list. False: none.
  bool normalization(std::vector<double>& mean, std::vector<double>& std) const;
  size_t size() const { return transforms_.size() + (host_mean_.empty() ? 0 : 1); }  // normalize fused in write()

  // Device-side augmentation (data.cache = "device", a defer_normalize pipeline): "" when every
  // transform left has an index map, else which one has none (for the error message).
  std::string without_index_map() const;
  // One sample's transforms as a single gather: output pixel (y, x) reads input (ys[y], xs[x]) of the
  // data.image_size image, -1 meaning the fill value 0. Draws from `rng` as process() would.
  void index_maps(Rng& rng, std::vector<int64_t>& ys, std::vector<int64_t>& xs) const;

 private:
  ImageGeometry g_;
  std::vector<TransformPtr> transforms_;
  std::vector<std::string> names_;  // "data.augment[i] (name)" of each kept transform
  bool presize_ = true;             // no transform sizes the output: resize before the first transform
  bool defer_normalize_ = false;
  std::vector<double> mean_, std_;
  // A final normalize on the host is done by write(): 8-bit samples through one table per channel (the same
  // floats as Normalize::apply), in the pass that writes CHW, instead of two passes over a float image.
  std::vector<double> host_mean_, host_std_;
  std::vector<float> host_table_;  // [channel][0..255]
  bool reduced_ = true;
  // Transforms from `first` on, then the final resize.
  void transform(Image& img, Rng& rng, size_t first = 0) const;
  void write(const Image& img, float* out) const;
  void write_u8(const Image& img, uint8_t* out) const;
};

}  // namespace kg::data
