// Text: data.text_cols tokenized by the tokenizer in the model folder (model.pretrained), cached under
// <paths.runs>/.cache/tokens (data/text_inputs.h). It has no images: the image-only options and commands refuse it.
#include <filesystem>

#include "core/error.h"
#include "core/strings.h"
#include "data/text_inputs.h"
#include "model/model.h"
#include "model/text/hf_config.h"
#include "session/modality.h"
#include "train/options.h"

namespace kg::session {
namespace {

class TextModality final : public Modality {
 public:
  std::string name() const override { return "text"; }
  bool can(Capability) const override { return false; }
  std::string why_not() const override { return "a text task (data.text_cols) has no images"; }
  int64_t seq_len(const data::DataOptions& d) const override { return d.max_length; }

  nlohmann::json input_json(const data::DataOptions& d, const data::ImageGeometry&) const override {
    nlohmann::json j = {{"text_cols", d.text_cols}, {"max_length", d.max_length}};
    if (d.stride) {
      j["stride"] = *d.stride;
      j["window_pool"] = d.window_pool;
    }
    return j;
  }
  std::string describe_input(const data::DataOptions& d) const override {
    if (d.stride)
      return "text " + join(d.text_cols, " + ") + ", windows of " + std::to_string(d.max_length) + " tokens sharing " +
             std::to_string(*d.stride) + " (predictions pooled by " + d.window_pool + ")";
    return "text " + join(d.text_cols, " + ") + ", up to " + std::to_string(d.max_length) + " tokens";
  }

  std::unique_ptr<data::Collator> collator(const config::Recipe& recipe, const data::Table& t,
                                           int threads) const override {
    const auto& m = recipe.get<model::ModelOptions>();
    KG_CHECK(!m.pretrained.empty(), ConfigError,
             "data.text_cols makes this a text task, and its tokenizer comes from the model folder: set "
             "model.pretrained to a Hugging Face folder (config.json, model.safetensors or pytorch_model.bin, and "
             "tokenizer.json or spm.model)");
    std::error_code ec;
    KG_CHECK(std::filesystem::is_directory(m.pretrained, ec), ConfigError, "model.pretrained = \"", m.pretrained,
             "\": a text model is a Hugging Face folder (config.json, the weights, the tokenizer files); this is not "
             "a folder");
    const auto cfg = model::text::HfConfig::read((std::filesystem::path(m.pretrained) / "config.json").string());
    data::TextSpec spec;
    spec.folder = m.pretrained;
    spec.pad_id = cfg.get_int("pad_token_id", 0);
    spec.cache_dir = (std::filesystem::path(recipe.get<train::PathsOptions>().runs) / ".cache" / "tokens").string();
    spec.threads = threads;
    return std::make_unique<data::TextInputs>(recipe.get<data::DataOptions>(), t, spec);
  }
};

}  // namespace

KG_REGISTER_MODALITY(TextModality);

}  // namespace kg::session
