#include "session/effective_recipe.h"

#include <map>
#include <numeric>
#include <sstream>

#include "core/strings.h"
#include "data/options.h"
#include "model/model.h"
#include "model/weights/weights_config.h"
#include "optim/schedule.h"

namespace kg::session {
namespace {

using config::json;

std::string list_str(const std::vector<double>& v) {
  std::ostringstream s;
  s << "[";
  for (size_t i = 0; i < v.size(); ++i) s << (i ? ", " : "") << v[i];
  return s.str() + "]";
}

// The weights' per-channel values for `channels` channels: as they are, or their average for gray images (what
// timm's adapt_input_conv does to the first conv, summing the RGB kernels).
std::vector<double> per_channel(const std::vector<double>& v, int64_t channels) {
  if (channels != 1 || v.size() <= 1) return v;
  return {std::accumulate(v.begin(), v.end(), 0.0) / static_cast<double>(v.size())};
}

// timm's interpolation names in kgtrain's resize vocabulary; "" when kgtrain has none for it.
std::string interpolation_of(const std::string& timm) {
  if (timm == "bicubic") return "cubic";
  if (timm == "bilinear") return "linear";
  if (timm == "nearest") return "nearest";
  return "";
}

}  // namespace

EffectiveRecipe follow_weights_preprocessing(const config::Recipe& recipe) {
  const auto& opts = recipe.get<model::ModelOptions>();
  if (opts.pretrained.empty()) return {recipe, {}};
  const auto cfg = model::weights_config_for(opts.pretrained);
  if (!cfg || cfg->preprocessing.empty()) return {recipe, {}};
  const model::WeightsPreprocessing& p = cfg->preprocessing;
  const config::Origin from = config::Origin::at(cfg->path, 0, 0);
  std::vector<std::pair<std::string, json>> sizes;
  std::vector<std::string> notes;
  const std::string where = " (" + cfg->path + ")";
  const auto& dopt = recipe.get<data::DataOptions>();

  if (p.input_size.size() == 3) {
    const json hw = json::array({p.input_size[1], p.input_size[2]});
    const config::Origin size_origin = recipe.origin_of("data.image_size");
    const auto& size = dopt.image_size;
    const auto& st = size.stages.front();
    if (size_origin.kind == config::Origin::Kind::Default) {
      sizes.emplace_back("data.image_size", hw);
      notes.push_back("data.image_size = " + hw.dump() + where);
    } else if (size.schedule || st.height != p.input_size[1] || st.width != p.input_size[2]) {
      notes.push_back("data.image_size = " + json(size).dump() + " (" + size_origin.str() +
                      "; the weights were made at " + hw.dump() + ")");
    }
  }

  struct {
    json value;
    std::map<std::string, config::Origin> inner;
  } aug{dopt.augment, {}};
  const int64_t channels = dopt.channels;
  bool has_normalize = false, changed = false;
  for (size_t i = 0; i < aug.value.size(); ++i) {
    json& t = aug.value[i];
    const std::string name = t.value("name", ""), at = "data.augment[" + std::to_string(i) + "] (" + name + ")";
    if (name == "normalize") {
      has_normalize = true;
      if (!p.mean.empty() && !t.contains("mean") && !t.contains("preset")) {
        t["mean"] = per_channel(p.mean, channels);
        aug.inner["[" + std::to_string(i) + "].mean"] = from;
        notes.push_back(at + " mean = " + list_str(t["mean"].get<std::vector<double>>()) + where), changed = true;
      }
      if (!p.std.empty() && !t.contains("std") && !t.contains("preset")) {
        t["std"] = per_channel(p.std, channels);
        aug.inner["[" + std::to_string(i) + "].std"] = from;
        notes.push_back(at + " std = " + list_str(t["std"].get<std::vector<double>>()) + where), changed = true;
      }
    } else if (name == "center_crop") {
      if (p.crop_pct && !t.contains("crop_pct")) {
        t["crop_pct"] = *p.crop_pct;
        aug.inner["[" + std::to_string(i) + "].crop_pct"] = from;
        notes.push_back(at + " crop_pct = " + json(*p.crop_pct).dump() + where), changed = true;
      }
      const std::string interp = interpolation_of(p.interpolation);
      if (!interp.empty() && !t.contains("interpolation")) {
        t["interpolation"] = interp;
        aug.inner["[" + std::to_string(i) + "].interpolation"] = from;
        notes.push_back(at + " interpolation = \"" + interp + "\"" + where), changed = true;
      }
    }
  }
  if (!has_normalize && !p.mean.empty() && !p.std.empty()) {
    const json t = {
        {"name", "normalize"}, {"mean", per_channel(p.mean, channels)}, {"std", per_channel(p.std, channels)}};
    aug.inner["[" + std::to_string(aug.value.size()) + "]"] = from;
    aug.value.push_back(t);
    notes.push_back("data.augment[" + std::to_string(aug.value.size() - 1) +
                    "] (normalize) added, mean = " + list_str(t["mean"].get<std::vector<double>>()) +
                    ", std = " + list_str(t["std"].get<std::vector<double>>()) + where);
    changed = true;
  }
  config::Recipe out = sizes.empty() ? recipe : recipe.with(sizes, from);
  if (changed) out = out.amended("data.augment", aug.value, aug.inner);
  return {out, notes};
}

bool has_warmup(const config::Recipe& recipe) {
  const auto& s = recipe.get<optim::ScheduleOptions>();
  return s.warmup_steps > 0 || s.warmup_epochs > 0;
}

EffectiveRecipe effective_recipe(const config::Recipe& recipe, const Resolutions& r) {
  EffectiveRecipe out{recipe, {}};
  if (r.follow_weights) out = follow_weights_preprocessing(recipe);
  if (r.batch_size) out.recipe = out.recipe.resolved("train.batch_size", *r.batch_size);
  if (r.lr) out.recipe = out.recipe.resolved("optim.lr", *r.lr);
  if (r.smoke_warmup && has_warmup(out.recipe))
    out.recipe = out.recipe.with({{"schedule.warmup_steps", 1}, {"schedule.warmup_epochs", 0.0}},
                                 config::Origin::command_line());
  return out;
}

}  // namespace kg::session
