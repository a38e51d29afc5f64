// identity: the batch as it is (the plain prediction every TTA set should include).
#include "tta/view.h"

namespace kg::tta {
namespace {

struct IdentityOptions {};

class IdentityView : public View {
 public:
  std::string name() const override { return "identity"; }
  int64_t count() const override { return 1; }
  std::string label(int64_t) const override { return "identity"; }
  at::Tensor apply(const at::Tensor& x, int64_t) const override { return x; }
};

KG_REGISTER(view_registry(), "identity", "the input unchanged", "[tta]\nviews = [\"identity\"]",
            config::Fields<IdentityOptions>(), [](const IdentityOptions&, const data::ImageGeometry&) -> ViewPtr {
              return std::make_unique<IdentityView>();
            });

}  // namespace
}  // namespace kg::tta
