// Images: data.image_dir / path_col files (or a pack), decoded and augmented by the loader's pipeline. Everything
// kgtrain has was made for them.
#include "core/strings.h"
#include "session/modality.h"

namespace kg::session {
namespace {

class ImageModality final : public Modality {
 public:
  std::string name() const override { return "image"; }
  bool can(Capability) const override { return true; }
  std::string why_not() const override { return ""; }
  int64_t seq_len(const data::DataOptions&) const override { return 0; }
  std::unique_ptr<data::Collator> collator(const config::Recipe&, const data::Table&, int) const override {
    return nullptr;
  }
  nlohmann::json input_json(const data::DataOptions&, const data::ImageGeometry& g) const override {
    return {{"channels", g.channels}, {"height", g.height}, {"width", g.width}};
  }
  std::string describe_input(const data::DataOptions& d) const override {
    const auto stages = data::size_schedule(d);
    std::string sizes;
    for (auto& st : stages)
      sizes += (sizes.empty() ? "" : ", ") + std::to_string(st.size.height) + "x" + std::to_string(st.size.width) +
               (stages.size() > 1 ? " from " + format_significant(st.start * 100, 3) + "%" : "");
    return std::to_string(d.channels) + "x" + sizes;
  }
};

}  // namespace

KG_REGISTER_MODALITY(ImageModality);

}  // namespace kg::session
