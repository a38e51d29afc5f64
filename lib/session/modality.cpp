#include "session/modality.h"

#include <map>

#include "core/error.h"
#include "data/mixup.h"
#include "tta/view.h"

namespace kg::session {
namespace {

std::map<std::string, std::unique_ptr<Modality>>& modalities() {
  static std::map<std::string, std::unique_ptr<Modality>> r;
  return r;
}

bool identity_view(const config::json& v) {
  if (v.is_string()) return v.get<std::string>() == "identity";
  return v.is_object() && v.contains("name") && v["name"] == "identity";
}

}  // namespace

bool register_modality(std::unique_ptr<Modality> m) {
  const std::string name = m->name();
  KG_ASSERT(!modalities().count(name), "modality \"", name, "\" registered twice");
  modalities()[name] = std::move(m);
  return true;
}

const Modality& modality_of(const data::DataOptions& d) {
  const std::string name = data::resolved_modality(d);
  auto it = modalities().find(name);
  KG_ASSERT(it != modalities().end(), "no modality \"", name, "\" is registered");
  return *it->second;
}

const Modality& modality_of(const config::Recipe& recipe) { return modality_of(recipe.get<data::DataOptions>()); }

void Modality::check(const config::Recipe& recipe, const std::string& command) const {
  const auto& d = recipe.get<data::DataOptions>();
  const std::string why = "; " + why_not();
  KG_CHECK(can(Capability::augment) || d.augment.empty(), ConfigError, "data.augment lists image transforms", why,
           ": set data.augment = []");
  KG_CHECK(can(Capability::device_cache) || d.cache != "device", ConfigError,
           "data.cache = \"device\" keeps decoded images on the device", why,
           ": its inputs are computed once and cached on disk anyway; set data.cache = \"none\"");
  const auto& mix = recipe.get<data::MixupOptions>();
  KG_CHECK(can(Capability::mixup) || !(mix.mixup_alpha > 0 || mix.cutmix_alpha > 0 || mix.cutmix_minmax.has_value()),
           ConfigError, "mixup / cutmix blend images", why, ": set mixup.mixup_alpha and mixup.cutmix_alpha to 0");
  if (!can(Capability::tta_views) && (command == "tta-predict" || command == "pseudo-label" || command == "fit")) {
    for (const auto& v : recipe.get<tta::TtaOptions>().views)
      KG_CHECK(identity_view(v), ConfigError, "tta.views: ", v.dump(), " transforms images", why,
               ": set tta.views = [\"identity\"] (fold ensembles still average)");
  }
}

std::vector<tta::ViewPtr> Modality::tta_views(const config::Recipe& recipe, const data::ImageGeometry& g) const {
  if (can(Capability::tta_views)) return tta::build_views(recipe, g);
  return tta::build_views(config::json::array({"identity"}), g, "tta.views");
}

void Modality::require(Capability c, const std::string& command, const std::string& what) const {
  KG_CHECK(can(c), ConfigError, "kgtrain ", command, " ", what, "; ", why_not(), ": it does not apply to this recipe");
}

}  // namespace kg::session
