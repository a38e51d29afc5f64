// multi_scale: the batch resized to each of several sizes (bilinear, align_corners = false, as
// F.interpolate). Models with global pooling accept any input size; larger-than-training sizes often
// help (the "FixRes" effect: train at 224, test at 256-288).
#include "core/error.h"
#include "tta/view.h"

namespace kg::tta {
namespace {

// Keys of the multi_scale TTA view (tta.views); each field's doc is in multi_scale_fields() below and
// docs/reference.md.
struct MultiScaleOptions {
  config::json sizes;
};

class MultiScaleView : public View {
 public:
  explicit MultiScaleView(std::vector<std::pair<int64_t, int64_t>> sizes) : sizes_(std::move(sizes)) {}
  std::string name() const override { return "multi_scale"; }
  int64_t count() const override { return static_cast<int64_t>(sizes_.size()); }
  std::string label(int64_t i) const override {
    auto [h, w] = sizes_.at(static_cast<size_t>(i));
    return "multi_scale/" + std::to_string(h) + (h == w ? "" : "x" + std::to_string(w));
  }
  at::Tensor apply(const at::Tensor& x, int64_t i) const override {
    auto [h, w] = sizes_.at(static_cast<size_t>(i));
    return resize_bilinear(x, h, w);
  }

 private:
  std::vector<std::pair<int64_t, int64_t>> sizes_;
};

std::string check_sizes(const config::json& v) {
  auto pos = [](const config::json& x) { return x.is_number_integer() && x.get<int64_t>() > 0; };
  bool ok = v.is_array() && !v.empty();
  if (ok)
    for (auto& s : v) ok = ok && (pos(s) || (s.is_array() && s.size() == 2 && pos(s[0]) && pos(s[1])));
  return ok ? "" : "expected a non-empty array of positive sizes, each N or [height, width], got " + v.dump();
}

config::Fields<MultiScaleOptions> multi_scale_fields() {
  config::Fields<MultiScaleOptions> f;
  f.field("sizes", &MultiScaleOptions::sizes,
          "required: sizes to predict at, each N (square) or [height, width], e.g. [224, 256, 288]")
      .check(check_sizes);
  return f;
}

KG_REGISTER(view_registry(), "multi_scale", "the batch resized (bilinear) to each of several sizes",
            "[tta]\nviews = [{ name = \"multi_scale\", sizes = [16, 20, [16, 24]] }]", multi_scale_fields(),
            [](const MultiScaleOptions& o, const data::ImageGeometry&) -> ViewPtr {
              KG_CHECK(!o.sizes.is_null(), ConfigError, "sizes: required, e.g. sizes = [224, 256, 288]");
              std::vector<std::pair<int64_t, int64_t>> sizes;
              for (auto& s : o.sizes)
                if (s.is_array())
                  sizes.emplace_back(s[0].get<int64_t>(), s[1].get<int64_t>());
                else
                  sizes.emplace_back(s.get<int64_t>(), s.get<int64_t>());
              return std::make_unique<MultiScaleView>(std::move(sizes));
            });

}  // namespace
}  // namespace kg::tta
