// Masked-language-model batches: a text collator's token ids with a share of the tokens masked, as BERT and DeBERTa
// pre-train (Devlin et al. 2019): of the tokens chosen, 80 % become the mask token, 10 % a random token, 10 % stay;
// the network predicts every chosen position (Inputs::predict) and the targets are their original ids (-100
// elsewhere, transformers' ignore index).
//
// Whole-word masking picks words, not tokens, until the share is reached (transformers'
// DataCollatorForWholeWordMask, without its BERT-only restriction): a token continues the word before it when the
// tokenizer says so -- WordPiece's "##" prefix, or, for sentencepiece ("\u2581") and byte-level BPE ("\u0120")
// vocabularies, the lack of the word-start mark. Special tokens and padding are never chosen.
//
// The masks are a function of the seed and the batch's rows: a shuffled epoch masks anew, the validation rows are
// masked alike every epoch (their loss compares across epochs), and a resumed run masks what the uninterrupted one
// did.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <ATen/core/Tensor.h>

#include "data/collator.h"
#include "model/inputs.h"

namespace kg::data {

struct MaskingOptions {
  double probability = 0.15;  // the share of each text's tokens predicted
  bool whole_word = true;     // choose whole words (false: each token on its own, with that probability)
  uint64_t seed = 0;
};

// What masking needs from the tokenizer.
struct MaskVocabulary {
  int64_t mask_id = -1;
  int64_t size = 0;                // random replacements are drawn from [0, size)
  std::vector<uint8_t> special;    // by id: never masked
  std::vector<uint8_t> continues;  // by id: the token continues the word before it
  // From a tokenizer folder (model.pretrained): ConfigError naming the folder when its tokenizer has no mask token
  // ([MASK] or <mask>).
  static MaskVocabulary from_folder(const std::string& folder);
};

class MaskingCollator final : public Collator {
 public:
  // Masks the batches `inner` makes (text: their ids and attention mask).
  MaskingCollator(std::unique_ptr<Collator> inner, MaskVocabulary vocab, const MaskingOptions& o);

  // inner's batch with ids masked and `predict` set: bool [B, L].
  model::Inputs batch(const std::vector<int64_t>& rows, bool pin_memory) const override;
  // The original ids at `made.predict`'s positions, -100 elsewhere: int64 [B, L].
  at::Tensor targets(const std::vector<int64_t>& rows, const model::Inputs& made) const override;
  // inner's samples: with data.stride, each window of a long text is a text to pre-train on.
  std::vector<int64_t> samples(const std::vector<int64_t>& rows) const override { return inner_->samples(rows); }
  std::vector<int64_t> grouped(std::vector<int64_t> order, int64_t batch_size) const override {
    return inner_->grouped(std::move(order), batch_size);
  }
  std::string describe() const override;

  // Positions [0, n) of one text's ids chosen for prediction (`rng_seed` picks them).
  std::vector<int64_t> choose(const int64_t* ids, int64_t n, uint64_t rng_seed) const;

 private:
  std::unique_ptr<Collator> inner_;
  MaskVocabulary vocab_;
  MaskingOptions o_;
};

}  // namespace kg::data
