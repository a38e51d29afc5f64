// five_crop and ten_crop: torchvision's FiveCrop / TenCrop (transforms.functional.five_crop, ten_crop with
// vertical_flip = false) on the batch, each crop resized back to the input size unless resize = false.
#include <torch/torch.h>

#include <cmath>

#include "core/error.h"
#include "tta/view.h"

namespace kg::tta {
namespace {

// Keys of the five_crop and ten_crop TTA views (tta.views); field docs: crops_fields() below, docs/reference.md.
struct CropOptions {
  config::json size = 0;
  bool resize = true;
};

const char* const kCorners[] = {"tl", "tr", "bl", "br", "center"};

class CropView : public View {
 public:
  CropView(std::string name, int64_t h, int64_t w, bool resize, bool ten)
      : name_(std::move(name)), h_(h), w_(w), resize_(resize), ten_(ten) {}
  std::string name() const override { return name_; }
  int64_t count() const override { return ten_ ? 10 : 5; }
  std::string label(int64_t i) const override { return name_ + "/" + (i >= 5 ? "hflip_" : "") + kCorners[i % 5]; }
  at::Tensor apply(const at::Tensor& x, int64_t i) const override {
    KG_ASSERT(i >= 0 && i < count(), name_, " view index ", i);
    const int64_t H = x.size(-2), W = x.size(-1);
    KG_CHECK(h_ <= H && w_ <= W, ConfigError, "tta_view ", name_, ": crop ", h_, " x ", w_,
             " is larger than the batch's ", H, " x ", W, " images");
    const at::Tensor src = i >= 5 ? x.flip({-1}) : x;
    int64_t top = 0, left = 0;
    switch (i % 5) {
      case 0:
        break;
      case 1:
        left = W - w_;
        break;
      case 2:
        top = H - h_;
        break;
      case 3:
        top = H - h_, left = W - w_;
        break;
      default:  // torchvision center_crop: int(round((H - h) / 2.0)), Python's round half to even
        top = static_cast<int64_t>(std::nearbyint((H - h_) / 2.0));
        left = static_cast<int64_t>(std::nearbyint((W - w_) / 2.0));
    }
    at::Tensor crop = src.narrow(-2, top, h_).narrow(-1, left, w_);
    return resize_ ? resize_bilinear(crop, H, W) : crop.contiguous();
  }

 private:
  std::string name_;
  int64_t h_, w_;
  bool resize_, ten_;
};

std::string check_size(const config::json& v) {
  auto pos = [](const config::json& x) { return x.is_number_integer() && x.get<int64_t>() > 0; };
  if (v.is_number_integer() && v.get<int64_t>() >= 0) return "";
  if (v.is_array() && v.size() == 2 && pos(v[0]) && pos(v[1])) return "";
  return "expected a crop side >= 0 (0 = 0.875 x the shorter image side) or [height, width] of positive integers, "
         "got " +
         v.dump();
}

config::Fields<CropOptions> crops_fields() {
  config::Fields<CropOptions> f;
  f.field("size", &CropOptions::size,
          "crop side N or [height, width] in pixels; 0 = round(0.875 x the shorter image side)")
      .check(check_size);
  f.field("resize", &CropOptions::resize,
          "resize each crop back to the input size (bilinear); false keeps the crop size");
  return f;
}

ViewPtr make(const std::string& name, const CropOptions& o, const data::ImageGeometry& g, bool ten) {
  int64_t h = 0, w = 0;
  if (o.size.is_array()) {
    h = o.size[0].get<int64_t>();
    w = o.size[1].get<int64_t>();
  } else if (o.size.get<int64_t>() > 0) {
    h = w = o.size.get<int64_t>();
  } else {
    h = w = std::max<int64_t>(1, std::llround(0.875 * static_cast<double>(std::min(g.height, g.width))));
  }
  KG_CHECK(h <= g.height && w <= g.width, ConfigError, "size: a ", h, " x ", w, " crop does not fit in the ", g.height,
           " x ", g.width, " images of data.image_size (allowed: up to ", g.height, " x ", g.width, ")");
  return std::make_unique<CropView>(name, h, w, o.resize, ten);
}

KG_REGISTER(view_registry(), "five_crop",
            "the four corner crops and the centre crop (torchvision FiveCrop order: tl, tr, bl, br, center)",
            "[tta]\nviews = [{ name = \"five_crop\", size = 14 }]", crops_fields(),
            [](const CropOptions& o, const data::ImageGeometry& g) { return make("five_crop", o, g, false); });

KG_REGISTER(view_registry(), "ten_crop",
            "five_crop of the image, then five_crop of its horizontal mirror (torchvision TenCrop)",
            "[tta]\nviews = [{ name = \"ten_crop\" }]", crops_fields(),
            [](const CropOptions& o, const data::ImageGeometry& g) { return make("ten_crop", o, g, true); });

}  // namespace
}  // namespace kg::tta
