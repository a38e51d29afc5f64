// Per-image transforms on 8-bit or float HWC images (RGB order), and the pipeline that turns an
// image into a CHW float tensor. Randomness comes from the caller's Rng, seeded per (seed, epoch, sample).
#pragma once
#include <memory>
#include <vector>

#include <opencv2/core/mat.hpp>

#include "config/tree.h"
#include "core/random.h"
#include "core/registry.h"
#include "data/options.h"

namespace kg::data {

class Transform {
 public:
  virtual ~Transform() = default;
  virtual void apply(cv::Mat& img, Rng& rng) const = 0;
  // Random transforms are training-only; evaluation keeps the deterministic ones (normalize, ...).
  virtual bool random() const = 0;
  // True for transforms that produce data.image_size themselves (resize, center_crop,
  // random_resized_crop): the pipeline then hands them the decoded image at its own size instead of
  // resizing it first. Transforms before the first such one also see the original size.
  virtual bool sizes_output() const { return false; }
};
using TransformPtr = std::unique_ptr<Transform>;

using TransformRegistry = Registry<TransformPtr(const ImageGeometry&)>;
TransformRegistry& transform_registry();

class Pipeline {
 public:
  // `augment` is the data.augment array; `train` false keeps only deterministic transforms.
  Pipeline(const config::json& augment, const ImageGeometry& g, bool train);
  // Decodes `path`, resizes to the model size, applies the transforms and writes CHW floats to `out`.
  void load(const std::string& path, Rng& rng, float* out) const;
  // The same from an already decoded 8-bit image. Unless a transform sizes the output itself, the
  // image is first resized to data.image_size; whatever size the transforms leave is resized to it last.
  void process(cv::Mat img, Rng& rng, float* out) const;
  const ImageGeometry& geometry() const { return g_; }
  size_t size() const { return transforms_.size(); }

 private:
  ImageGeometry g_;
  std::vector<TransformPtr> transforms_;
  bool presize_ = true;  // no transform sizes the output: resize before the first transform
};

}  // namespace kg::data
