// resize: bring the decoded image to `size` (default data.image_size) by stretching, by scaling the
// shorter side and cropping the centre (timm's eval resize + center crop at crop_pct = 1), or by
// letterboxing. Deterministic: kept at evaluation.
#include <optional>

#include <opencv2/core.hpp>

#include "core/error.h"
#include "data/transform.h"
#include "data/transforms/common.h"

namespace kg::data {
namespace {

// Keys of transform resize; each field's doc is in resize_fields() below and docs/reference.md.
struct ResizeOptions {
  std::optional<config::json> size;
  std::string mode = "stretch";
  std::string interpolation = "auto";
  double fill = 0;
};

class Resize : public Transform {
 public:
  Resize(const ResizeOptions& o, const ImageGeometry& g)
      : o_(o), h_(static_cast<int>(g.height)), w_(static_cast<int>(g.width)) {
    if (o.size && o.size->is_array()) {
      h_ = (*o.size)[0].get<int>();
      w_ = (*o.size)[1].get<int>();
    } else if (o.size && o.size->is_number_integer()) {
      h_ = w_ = o.size->get<int>();
    }
  }
  bool random() const override { return false; }
  bool sizes_output() const override { return true; }
  void apply(cv::Mat& img, Rng&) const override {
    if (o_.mode == "stretch") {
      transforms::resize_image(img, h_, w_, o_.interpolation);
    } else if (o_.mode == "shorter") {
      cv::Size s = transforms::cover_size(img.size(), h_, w_);
      transforms::resize_image(img, s.height, s.width, o_.interpolation);
      transforms::center_crop(img, h_, w_, o_.fill);
    } else {  // pad
      cv::Size s = transforms::fit_size(img.size(), h_, w_);
      transforms::resize_image(img, s.height, s.width, o_.interpolation);
      transforms::center_crop(img, h_, w_, o_.fill);  // pads symmetrically, crops nothing
    }
  }

 private:
  ResizeOptions o_;
  int h_, w_;
};

std::string check_size(const config::json& v) {
  auto positive = [](const config::json& x) { return x.is_number_integer() && x.get<int64_t>() > 0; };
  if (positive(v) || (v.is_array() && v.size() == 2 && positive(v[0]) && positive(v[1]))) return "";
  return "expected a positive integer or [height, width] of positive integers, got " + v.dump();
}

config::Fields<ResizeOptions> resize_fields() {
  config::Fields<ResizeOptions> f;
  f.field("size", &ResizeOptions::size, "output size N or [height, width] (default: data.image_size)")
      .check(check_size);
  f.field("mode", &ResizeOptions::mode,
          "stretch to size | shorter: scale to cover, crop the centre | pad: fit inside, pad with fill")
      .choices({"stretch", "shorter", "pad"});
  f.field("interpolation", &ResizeOptions::interpolation, "auto = area when shrinking, linear when growing")
      .choices(transforms::resize_interpolations());
  f.field("fill", &ResizeOptions::fill, "pad mode's border value (0..255 on 8-bit images, as given on float ones)");
  return f;
}
KG_TRANSFORMS_NEED_OPENCV("resize");

KG_REGISTER(transform_registry(), "resize",
            "resize the decoded image to data.image_size (stretch, shorter side + centre crop, or letterbox)",
            "[[data.augment]]\nname = \"resize\"\nmode = \"shorter\"", resize_fields(),
            [](const ResizeOptions& o, const ImageGeometry& g) -> TransformPtr {
              return std::make_unique<Resize>(o, g);
            });

}  // namespace
}  // namespace kg::data
