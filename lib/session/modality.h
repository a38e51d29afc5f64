// The text modality as the jobs set it up: a table's data.text_cols tokenized by the tokenizer in the model folder
// (model.pretrained), cached under <paths.runs>/.cache/tokens, and the checks that keep a text recipe from taking an
// image-only option (data.augment, mixup, data.cache = "device", tta views other than identity).
#pragma once
#include <memory>
#include <string>

#include "config/recipe.h"
#include "data/table.h"
#include "data/text_inputs.h"

namespace kg::session {

// The tokens of `t` (a table with text): ConfigError (exit 2) when model.pretrained names no folder with a tokenizer
// and a config.json; DataError naming the row for text the tokenizer refuses.
std::unique_ptr<data::TextInputs> text_inputs(const config::Recipe& recipe, const data::Table& t, int threads);

// ConfigError naming the key for an option that only images have, set in a text recipe. `command` names the job.
void check_text_recipe(const config::Recipe& recipe, const std::string& command);

// ConfigError (exit 2) when the recipe's data is text: "kgtrain <command> <what>; ...". For the commands that only
// make sense for images.
void refuse_text(const config::Recipe& recipe, const std::string& command, const std::string& what);

// data.max_length when the recipe's data is text (ModelContext::seq_len), else 0.
int64_t text_seq_len(const config::Recipe& recipe);

}  // namespace kg::session
