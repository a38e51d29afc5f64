// The text modality's inputs: a table's data.text_cols tokenized once by the model folder's tokenizer (cached on disk,
// keyed by the tokenizer's files, the truncation and every text), and each batch's token ids, attention mask and
// token type ids padded to the batch's longest row, rounded up to a multiple of 8 (the Hugging Face
// DataCollatorWithPadding with pad_to_multiple_of=8). What the image pipeline is to an image table.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "data/collator.h"
#include "data/options.h"
#include "data/table.h"
#include "data/tokenized.h"
#include "model/inputs.h"

namespace kg::data {

// Where a table's text is tokenized from: the tokenizer folder (model.pretrained), the padding id (config.json's
// pad_token_id), the cache folder ("" = no cache) and the threads.
struct TextSpec {
  std::string folder;
  int64_t pad_id = 0;
  std::string cache_dir;
  int threads = 1;
};

class TextInputs final : public Collator {
 public:
  // Tokenizes `t`'s texts (DataError naming the row for text the tokenizer refuses; ConfigError naming the folder
  // when it holds no tokenizer kgtrain reads).
  TextInputs(const DataOptions& o, const Table& t, const TextSpec& spec);

  const TokenizedRows& tokens() const { return tokens_; }
  int64_t pad_id() const { return pad_id_; }
  // data.stride: a sample is one of a row's windows (an entry of tokens()); without it, a row.
  std::vector<int64_t> samples(const std::vector<int64_t>& rows) const override;
  int64_t row_of(int64_t s) const override { return row_of_.empty() ? s : row_of_[static_cast<size_t>(s)]; }
  int64_t window_of(int64_t s) const override { return s - tokens_.first_entry(row_of(s)); }
  std::string window_pool() const override { return tokens_.windows.empty() ? "" : window_pool_; }
  // The batch of `samples`: ids, mask, type_ids int64 [B, L], L the longest rounded up to a multiple of 8.
  model::Inputs batch(const std::vector<int64_t>& samples, bool pin_memory = false) const override;
  // data.group_by_length: `order` regrouped into batches of similar length (length_grouped_order).
  std::vector<int64_t> grouped(std::vector<int64_t> order, int64_t batch_size) const override;
  // Longest rows first (by their first window: batches of similar length pad little); equal lengths keep their order.
  std::vector<size_t> prediction_order(const std::vector<int64_t>& rows) const override;
  // "tokens: 12 % of rows truncated at 256 (...); mean 87 tokens; tokens from the cache ..."
  std::string describe() const override;

 private:
  TokenizedRows tokens_;
  std::vector<int64_t> row_of_;  // each entry's row (data.stride); empty: entry = row
  std::string window_pool_;
  int64_t pad_id_ = 0;
  std::string note_;
};

// The SHA-256 of a folder's tokenizer files (tokenizer.json, spm.model, vocab.txt, merges.txt, vocab.json and the
// tokenizer_config.json / special_tokens_map.json / added_tokens.json beside them): what keys the token cache.
std::string tokenizer_files_hash(const std::string& folder);

}  // namespace kg::data
