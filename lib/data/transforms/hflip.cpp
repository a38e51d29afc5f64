// hflip: mirror left-right with probability p.
#if KG_WITH_OPENCV
#include <opencv2/core.hpp>
#endif

#include "core/error.h"
#include "data/transform.h"

namespace kg::data {
namespace {

// Keys of transform hflip; each field's doc is in flip_fields() below and docs/reference.md.
struct FlipOptions {
  double p = 0.5;
};

class HFlip : public Transform {
 public:
  explicit HFlip(const FlipOptions& o) : p_(o.p) {}
  bool random() const override { return true; }
  void apply(Image& img, Rng& rng) const override {
    // Into a new buffer: the caller's image may be shared (cache, TTA views).
#if KG_WITH_OPENCV
    if (rng.uniform() < p_) {
      cv::Mat out;
      cv::flip(img, out, 1);
      img = out;
    }
#else
    apply_index_map(*this, img, rng);
#endif
  }

  bool has_index_map() const override { return true; }
  void index_map(Rng& rng, int64_t h, int64_t w, std::vector<int64_t>& ys, std::vector<int64_t>& xs) const override {
    const bool on = rng.uniform() < p_;
    for (size_t i = 0; i < ys.size(); ++i) ys[i] = static_cast<int64_t>(i);
    for (size_t i = 0; i < xs.size(); ++i) xs[i] = on ? w - 1 - static_cast<int64_t>(i) : static_cast<int64_t>(i);
  }

 private:
  double p_;
};

config::Fields<FlipOptions> flip_fields() {
  config::Fields<FlipOptions> f;
  f.field("p", &FlipOptions::p, "probability of flipping").range(0, 1);
  return f;
}
KG_REGISTER(transform_registry(), "hflip", "mirror left-right with probability p", "[[data.augment]]\nname = \"hflip\"",
            flip_fields(),
            [](const FlipOptions& o, const ImageGeometry&) -> TransformPtr { return std::make_unique<HFlip>(o); });

}  // namespace
}  // namespace kg::data
