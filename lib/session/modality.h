// What a recipe's samples are. data.modality (resolved: data.text_cols makes "auto" text) names a Modality, one file
// each (session/modality_image.cpp, session/modality_text.cpp), registered by name. Jobs ask it instead of testing
// the data options:
//   - what it can do (Capability: the options and commands made for images: augmentation, mixup and cutmix, the
//     device cache, TTA views, Grad-CAM, pack, show-batch, bench-data),
//   - the recipe checks that follow from that (check(): an option set that the modality cannot use is a ConfigError
//     naming the key and what to set instead),
//   - the model's input spec (seq_len: tokens per sample; 0 for images, which take data.image_size and channels) and
//     how a checkpoint records it (input_json),
//   - the collator that makes a table's batches when the image pipeline does not (collator: text's token ids,
//     computed once and cached on disk, padded per batch; none for images, whose decoding stays in the pipeline),
//   - the TTA views prediction runs (tta_views: tta.views for images; the identity for text).
// Dummy inputs need no hook: model::dummy_inputs makes them from the ModelContext that seq_len fills in.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "config/recipe.h"
#include "core/macros.h"
#include "data/options.h"
#include "data/table.h"
#include "tta/view.h"
#include "data/collator.h"

namespace kg::session {

enum class Capability { augment, mixup, device_cache, tta_views, grad_cam, pack, show_batch, bench_data };

class Modality {
 public:
  virtual ~Modality() = default;
  virtual std::string name() const = 0;
  virtual bool can(Capability c) const = 0;
  // Why it cannot (the end of an error message): "a text task (data.text_cols) has no images".
  virtual std::string why_not() const = 0;
  // Tokens per sample for the model (ModelContext::seq_len); 0: the samples are images.
  virtual int64_t seq_len(const data::DataOptions& d) const = 0;
  // The batches of `t`'s rows when the image pipeline does not make them: text's token ids (ConfigError when
  // model.pretrained is no folder with a tokenizer and a config.json; DataError naming the row for text the tokenizer
  // refuses); null for images.
  virtual std::unique_ptr<data::Collator> collator(const config::Recipe& recipe, const data::Table& t,
                                                   int threads) const = 0;
  // A checkpoint's "input": {"channels", "height", "width"} of `g` for images, {"text_cols", "max_length"} for text.
  virtual nlohmann::json input_json(const data::DataOptions& d, const data::ImageGeometry& g) const = 0;
  // "text title + body, up to 256 tokens" / "3x224x224" (progressive resizing: every stage's size): the data line's
  // input.
  virtual std::string describe_input(const data::DataOptions& d) const = 0;
  // The views tta-predict and pseudo-label average (check() has refused views a modality cannot apply).
  std::vector<tta::ViewPtr> tta_views(const config::Recipe& recipe, const data::ImageGeometry& g) const;

  // ConfigError naming the key for each option the recipe sets that this modality cannot use (data.augment, mixup,
  // data.cache = "device", tta.views other than identity for the commands that predict). `command` names the job.
  void check(const config::Recipe& recipe, const std::string& command) const;
  // ConfigError (exit 2) "kgtrain <command> <what>; ..." unless it can `c`: for the commands made for images.
  void require(Capability c, const std::string& command, const std::string& what) const;
};

// The modality of a recipe's data options; InternalError for a name nothing registered.
const Modality& modality_of(const data::DataOptions& d);
const Modality& modality_of(const config::Recipe& recipe);

bool register_modality(std::unique_ptr<Modality> m);  // false for a duplicate name (a start-up InternalError)
#define KG_REGISTER_MODALITY(Type) \
  static const bool KG_CONCAT(kg_modality_, __COUNTER__) = ::kg::session::register_modality(std::make_unique<Type>())

}  // namespace kg::session
