// hflip, vflip and d4 (the 8 symmetries of the square: rotations by 0/90/180/270 degrees, each with
// and without a horizontal flip). Rotations follow torch.rot90(x, k, dims = [H, W]) (counter-clockwise).
#include <torch/torch.h>

#include "core/error.h"
#include "tta/view.h"

namespace kg::tta {
namespace {

struct FlipOptions {};

at::Tensor hflip(const at::Tensor& x) { return x.flip({-1}); }
at::Tensor vflip(const at::Tensor& x) { return x.flip({-2}); }

class HFlipView : public View {
 public:
  std::string name() const override { return "hflip"; }
  int64_t count() const override { return 1; }
  std::string label(int64_t) const override { return "hflip"; }
  at::Tensor apply(const at::Tensor& x, int64_t) const override { return hflip(x); }
};

class VFlipView : public View {
 public:
  std::string name() const override { return "vflip"; }
  int64_t count() const override { return 1; }
  std::string label(int64_t) const override { return "vflip"; }
  at::Tensor apply(const at::Tensor& x, int64_t) const override { return vflip(x); }
};

// View i: rot90^(i % 4) applied after a horizontal flip when i >= 4 ("rot90_hflip" = rot90(hflip(x))).
class D4View : public View {
 public:
  std::string name() const override { return "d4"; }
  int64_t count() const override { return 8; }
  std::string label(int64_t i) const override {
    static const char* rot[] = {"", "rot90", "rot180", "rot270"};
    const int64_t k = i % 4;
    if (i < 4) return std::string("d4/") + (k ? rot[k] : "identity");
    return std::string("d4/") + (k ? std::string(rot[k]) + "_hflip" : std::string("hflip"));
  }
  at::Tensor apply(const at::Tensor& x, int64_t i) const override {
    KG_ASSERT(i >= 0 && i < 8, "d4 view index ", i);
    at::Tensor y = i >= 4 ? hflip(x) : x;
    const int64_t k = i % 4;
    if (k == 0) return y;
    KG_CHECK(x.size(-1) == x.size(-2), ConfigError, "tta_view d4: rotations by 90 degrees need square images, got ",
             x.size(-2), " x ", x.size(-1));
    return at::rot90(y, k, {-2, -1}).contiguous();
  }
};

KG_REGISTER(view_registry(), "hflip", "mirror left-right", "[tta]\nviews = [\"identity\", \"hflip\"]",
            config::Fields<FlipOptions>(),
            [](const FlipOptions&, const data::ImageGeometry&) -> ViewPtr { return std::make_unique<HFlipView>(); });

KG_REGISTER(view_registry(), "vflip", "mirror top-bottom", "[tta]\nviews = [\"identity\", \"vflip\"]",
            config::Fields<FlipOptions>(),
            [](const FlipOptions&, const data::ImageGeometry&) -> ViewPtr { return std::make_unique<VFlipView>(); });

KG_REGISTER(
    view_registry(), "d4",
    "the 8 dihedral views: rotations by 0, 90, 180, 270 degrees, each also after a horizontal flip (square images)",
    "[tta]\nviews = [\"d4\"]", config::Fields<FlipOptions>(),
    [](const FlipOptions&, const data::ImageGeometry& g) -> ViewPtr {
      KG_CHECK(g.height == g.width, ConfigError, "tta_view d4 rotates by 90 degrees, which needs square images; ",
               "data.image_size is ", g.height, " x ", g.width, " (use hflip and vflip, or a square image_size)");
      return std::make_unique<D4View>();
    });

}  // namespace
}  // namespace kg::tta
