// `kgtrain pretrain`: continued masked-language-model pre-training of a text recipe's encoder on the recipe's own
// texts (train and test), as Kaggle NLP solutions do before fine-tuning (Feedback Prize, NBME). The recipe is the
// fine-tune recipe: its model.pretrained folder, its data.text_cols and max_length, its optimizer, schedule and
// training keys; [pretrain] adds the masking. It trains the encoder with its family's MLM head (model/text/mlm.h) on
// masked batches (data/mlm_masking.h), validates the masked-token loss on a held-out share of the texts, checkpoints
// like fit (an interrupted run continues with --resume), and writes RUN/model: a Hugging Face folder (config.json,
// model.safetensors with the head, the tokenizer files) that model.pretrained fine-tunes and transformers'
// AutoModelForMaskedLM reads.
#pragma once
#include <string>
#include <vector>

#include "session/session.h"

namespace kg::jobs {

// Recipe section [pretrain]; each field's doc is in pretrain_fields() (jobs/pretrain.cpp) and docs/reference.md.
struct PretrainOptions {
  static PretrainOptions load(const config::Tree& recipe);  // recipe.get<PretrainOptions>() decodes it once
  double mlm_probability = 0.15;
  bool whole_word = true;
  double valid_fraction = 0.05;
  std::vector<std::string> splits = {"train", "test"};
};

struct PretrainRequest : session::Session {
  bool resume = false;  // --resume: continue the run in --run-dir from its newest checkpoint
};

// Exit 0 when done; Interrupted (130 / 143) on a signal, everything saved; ConfigError (2) for a recipe that is not a
// text recipe, a tokenizer without a mask token, a family without an MLM head.
int run_pretrain(const PretrainRequest& o);

}  // namespace kg::jobs
