// vflip: mirror top-bottom with probability p.
#if KG_WITH_OPENCV
#include <opencv2/core.hpp>
#endif

#include "core/error.h"
#include "data/transform.h"

namespace kg::data {
namespace {

// Keys of transform vflip; each field's doc is in vflip_fields() below and docs/reference.md.
struct VFlipOptions {
  double p = 0.5;
};

class VFlip : public Transform {
 public:
  explicit VFlip(const VFlipOptions& o) : p_(o.p) {}
  bool random() const override { return true; }
  void apply(Image& img, Rng& rng) const override {
#if KG_WITH_OPENCV
    if (rng.uniform() >= p_) return;
    cv::Mat out;  // a new buffer: the caller's image may be shared
    cv::flip(img, out, 0);
    img = out;
#else
    apply_index_map(*this, img, rng);  // a new buffer: the caller's image may be shared
#endif
  }

  bool has_index_map() const override { return true; }
  void index_map(Rng& rng, int64_t h, int64_t w, std::vector<int64_t>& ys, std::vector<int64_t>& xs) const override {
    const bool on = rng.uniform() < p_;
    for (size_t i = 0; i < xs.size(); ++i) xs[i] = static_cast<int64_t>(i);
    for (size_t i = 0; i < ys.size(); ++i) ys[i] = on ? h - 1 - static_cast<int64_t>(i) : static_cast<int64_t>(i);
  }

 private:
  double p_;
};

config::Fields<VFlipOptions> vflip_fields() {
  config::Fields<VFlipOptions> f;
  f.field("p", &VFlipOptions::p, "probability of flipping").range(0, 1);
  return f;
}
KG_REGISTER(transform_registry(), "vflip", "mirror top-bottom with probability p", "[[data.augment]]\nname = \"vflip\"",
            vflip_fields(),
            [](const VFlipOptions& o, const ImageGeometry&) -> TransformPtr { return std::make_unique<VFlip>(o); });

}  // namespace
}  // namespace kg::data
