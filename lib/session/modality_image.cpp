// Images: data.image_dir / path_col files (or a pack), decoded and augmented by the loader's pipeline. Everything
// kgtrain has was made for them.
#include "session/modality.h"

namespace kg::session {
namespace {

class ImageModality final : public Modality {
 public:
  std::string name() const override { return "image"; }
  bool can(Capability) const override { return true; }
  std::string why_not() const override { return ""; }
  int64_t seq_len(const data::DataOptions&) const override { return 0; }
  std::unique_ptr<data::TextInputs> encode(const config::Recipe&, const data::Table&, int) const override {
    return nullptr;
  }
};

}  // namespace

KG_REGISTER_MODALITY(ImageModality);

}  // namespace kg::session
