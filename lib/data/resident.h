// data.cache = "device": a table's images decoded once, at data.image_size, into one uint8 tensor on
// the training device; each batch is gathered, augmented and normalized there in a few tensor ops
// (the GPU-resident data of the CIFAR-10 speedruns). No per-batch decoding, host transforms or
// host-to-device copies. The augmentation is the pipeline's own (transforms with an index map:
// pad_crop, hflip, vflip, then normalize), drawn from the same per-sample streams, so a batch equals
// the one the host pipeline makes from the same images.
#pragma once
#include <cstdint>
#include <vector>

#include <ATen/core/Tensor.h>
#include <c10/core/Device.h>

#include "data/options.h"

namespace kg::data {

struct Table;
class Pipeline;
class ImageCache;

class ResidentImages {
 public:
  // Decodes every row of `t` with `threads` threads (taking what `cache` already holds), resized to `g`
  // as the pipeline resizes, and moves them to `device`. ConfigError when they take more than
  // `max_bytes` (data.cache_max_gb); DataError naming the row of an unreadable image.
  ResidentImages(const Table& t, const ImageGeometry& g, const c10::Device& device, size_t max_bytes, int threads,
                 const ImageCache* cache = nullptr);

  // The float [B, C, H, W] batch (contiguous) of table rows `rows` on the device: sample
  // `row` transformed by `p`'s index maps drawn from its stream (seed, epoch, row), scaled to [0, 1]
  // and normalized with `p`'s device normalization.
  at::Tensor batch(const std::vector<int64_t>& rows, const Pipeline& p, uint64_t seed, int64_t epoch) const;

  int64_t size() const { return n_; }
  int64_t bytes() const;
  const ImageGeometry& geometry() const { return g_; }

  // ConfigError unless `p` can run on the device: a data.image_size schedule, or a transform without
  // an index map, is named with what to do instead.
  static void check_pipeline(const Pipeline& p, size_t stages);

 private:
  ImageGeometry g_;
  int64_t n_ = 0;
  // uint8 [N, H + 1, W + 1, C]: the extra last row and column are zeros, read by index -1 (the fill).
  at::Tensor images_;
};

}  // namespace kg::data
