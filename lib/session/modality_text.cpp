#include "session/text_input.h"

#include <filesystem>

#include "core/error.h"
#include "data/mixup.h"
#include "data/options.h"
#include "model/model.h"
#include "model/text/hf_config.h"
#include "train/options.h"
#include "tta/view.h"

namespace kg::session {

std::unique_ptr<data::TextInputs> text_inputs(const config::Recipe& recipe, const data::Table& t, int threads) {
  const auto& m = recipe.get<model::ModelOptions>();
  KG_CHECK(!m.pretrained.empty(), ConfigError,
           "data.text_cols makes this a text task, and its tokenizer comes from the model folder: set model.pretrained "
           "to a Hugging Face folder (config.json, model.safetensors or pytorch_model.bin, and tokenizer.json or "
           "spm.model)");
  std::error_code ec;
  KG_CHECK(std::filesystem::is_directory(m.pretrained, ec), ConfigError, "model.pretrained = \"", m.pretrained,
           "\": a text model is a Hugging Face folder (config.json, the weights, the tokenizer files); this is not a "
           "folder");
  const auto cfg = model::text::HfConfig::read((std::filesystem::path(m.pretrained) / "config.json").string());
  data::TextSpec spec;
  spec.folder = m.pretrained;
  spec.pad_id = cfg.get_int("pad_token_id", 0);
  spec.cache_dir = (std::filesystem::path(recipe.get<train::PathsOptions>().runs) / ".cache" / "tokens").string();
  spec.threads = threads;
  return std::make_unique<data::TextInputs>(recipe.get<data::DataOptions>(), t, spec);
}

namespace {
bool identity_view(const config::json& v) {
  if (v.is_string()) return v.get<std::string>() == "identity";
  return v.is_object() && v.contains("name") && v["name"] == "identity";
}
}  // namespace

void check_text_recipe(const config::Recipe& recipe, const std::string& command) {
  const auto& d = recipe.get<data::DataOptions>();
  if (!data::is_text(d)) return;
  const std::string why = "; a text task (data.text_cols) has no images";
  KG_CHECK(d.augment.empty(), ConfigError, "data.augment lists image transforms", why, ": set data.augment = []");
  KG_CHECK(d.cache != "device", ConfigError, "data.cache = \"device\" keeps decoded images on the device", why,
           ": its tokens are computed once and cached on disk anyway; set data.cache = \"none\"");
  const auto& mix = recipe.get<data::MixupOptions>();
  KG_CHECK(!(mix.mixup_alpha > 0 || mix.cutmix_alpha > 0 || mix.cutmix_minmax.has_value()), ConfigError,
           "mixup / cutmix blend images", why, ": set mixup.mixup_alpha and mixup.cutmix_alpha to 0");
  if (command == "tta-predict" || command == "pseudo-label" || command == "fit") {
    const auto& tta = recipe.get<tta::TtaOptions>();
    for (const auto& v : tta.views)
      KG_CHECK(identity_view(v), ConfigError, "tta.views: ", v.dump(), " transforms images", why,
               ": set tta.views = [\"identity\"] (fold ensembles still average)");
  }
}

void refuse_text(const config::Recipe& recipe, const std::string& command, const std::string& what) {
  const auto& d = recipe.get<data::DataOptions>();
  KG_CHECK(!data::is_text(d), ConfigError, "kgtrain ", command, " ", what,
           "; this recipe is a text task (data.text_cols = [",
           d.text_cols.empty() ? std::string() : "\"" + d.text_cols.front() + "\"",
           d.text_cols.size() > 1 ? ", ..." : "", "]), which it does not apply to");
}

int64_t text_seq_len(const config::Recipe& recipe) {
  const auto& d = recipe.get<data::DataOptions>();
  return data::is_text(d) ? d.max_length : 0;
}

}  // namespace kg::session
