// Text fixtures made at test time: a small labelled text + numbers task in the Kaggle layout and a tiny
// DeBERTa-v3-style Hugging Face folder (config.json, model.safetensors, the sentencepiece tokenizer of
// tests/text/fixtures/deberta_spm), so that fit, tta-predict and pseudo-label run on text without Python.
#pragma once
#include <string>

#include "support/temp_dir.h"

namespace kg::test {

// DATA/train.csv (id, text, words, label), DATA/test.csv (id, text, words) and DATA/test_labels.csv: "fox" texts
// tell of a quick brown fox, "dog" texts of a lazy dog, of varied lengths (4..60 words) with shared filler words;
// `words` is the text's word count. Returns DATA.
std::string make_tiny_text_task(const TempDir& dir, int train = 64, int test = 16);

// DIR/<name>: a DeBERTa-v3-shaped folder (hidden 16, 2 layers, relative attention, no absolute positions),
// randomly initialised with `seed`, its tokenizer the fixture sentencepiece model. Returns the folder.
std::string make_tiny_deberta(const TempDir& dir, const std::string& name = "deberta", int seed = 5);

// A recipe for them: text + the words feature, 2 folds, deberta-v2 with mean pooling, max_length 48.
std::string tiny_text_recipe(const std::string& data_root, const std::string& model_folder);

}  // namespace kg::test
