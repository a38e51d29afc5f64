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
  // The same from an already decoded 8-bit image.
  void process(cv::Mat img, Rng& rng, float* out) const;
  const ImageGeometry& geometry() const { return g_; }
  size_t size() const { return transforms_.size(); }

 private:
  ImageGeometry g_;
  std::vector<TransformPtr> transforms_;
};

}  // namespace kg::data
