// A table's text tokenized once: every row's token ids and type ids as the recipe's tokenizer gives them (special
// tokens added, truncated at data.max_length), stored flat; and the order a length-grouped epoch visits them in.
// Tokenizing is the text pipeline's decode step, done for the whole table before the first batch instead of per
// sample per epoch (a text's tokens do not change between epochs), and kept on disk keyed by everything that decides
// it, so a second fit, a fold or tta-predict starts at once.
#pragma once
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "text/tokenizer.h"

namespace kg::data {

// An entry is what the model sees as one sample: a row's encoding, or with data.stride one of a row's windows.
struct TokenizedRows {
  std::vector<int32_t> ids;      // every entry's ids, one after the other
  std::vector<uint8_t> types;    // the token type id of each of `ids` (0 or 1: the first or second text of a pair)
  std::vector<int64_t> offsets;  // entry e is [offsets[e], offsets[e + 1]); size() + 1 entries
  // With data.stride: row r's windows are entries [windows[r], windows[r + 1]); empty = one entry per row.
  std::vector<int64_t> windows;
  int64_t truncated = 0;   // rows whose encoding was longer than max_length: cut to it, or windowed
  int64_t max_length = 0;  // the truncation (window) length they were encoded with

  int64_t size() const { return offsets.empty() ? 0 : static_cast<int64_t>(offsets.size()) - 1; }  // entries
  int64_t rows() const { return windows.empty() ? size() : static_cast<int64_t>(windows.size()) - 1; }
  int64_t first_entry(int64_t row) const { return windows.empty() ? row : windows[static_cast<size_t>(row)]; }
  int64_t entries_of(int64_t row) const {
    return windows.empty() ? 1 : windows[static_cast<size_t>(row) + 1] - first_entry(row);
  }
  int64_t length(int64_t entry) const {
    return offsets[static_cast<size_t>(entry) + 1] - offsets[static_cast<size_t>(entry)];
  }
  // "12 % of rows truncated at 256" (rounded; "no row truncated at 256" when none); windowed: "12 % of rows longer
  // than 256, in 1.4 windows a row on average".
  std::string truncation_note() const;
};

// How a table's text becomes tokens.
struct TokenizeRequest {
  const text::Tokenizer* tokenizer = nullptr;
  std::string tokenizer_id;  // what identifies the tokenizer in the cache key (its files' bytes' hash)
  const std::vector<std::string>* first = nullptr;   // one text per row
  const std::vector<std::string>* second = nullptr;  // the pair's second text per row; null = single texts
  int64_t max_length = 512;                          // data.max_length: tokens per row, special tokens included
  text::TruncationOptions::Direction side = text::TruncationOptions::kRight;  // data.truncation_side
  text::TruncationOptions::Strategy strategy = text::TruncationOptions::kLongestFirst;
  // data.stride: a row longer than max_length becomes windows sharing this many tokens (Tokenizer::encode_windows,
  // in `side`'s order) instead of being truncated; single texts only (ConfigError for pairs). nullopt = truncate.
  std::optional<int64_t> stride;
  // Row r's place for messages ("train.csv row 17 (line 18)").
  std::function<std::string(size_t)> where;
  int threads = 1;
};

// Tokenizes every row (on `threads` threads). DataError naming the row (via `where`) for text that is not UTF-8,
// with the tokenizer's reason; a row that cannot be truncated to max_length (only the special tokens would fit)
// likewise. ConfigError for a stride with pairs, or one not below the text tokens a window holds.
TokenizedRows tokenize_rows(const TokenizeRequest& r);

// The cache key of a request: SHA-256 over the tokenizer's id, max_length, the truncation, the stride and every text.
std::string tokenize_key(const TokenizeRequest& r);
// tokenize_rows through a cache folder: `dir`/tokens-<key>.bin when it is there and whole, else tokenized and written
// there atomically (a cache that cannot be written is not an error: `note` says so). `note` also says whether the
// cache was hit.
TokenizedRows tokenize_rows_cached(const TokenizeRequest& r, const std::string& dir, std::string* note = nullptr);

// The cache file's bytes and back (DataError naming `where` for a file that is not one, or is cut short).
std::string serialize_tokens(const TokenizedRows& t);
TokenizedRows deserialize_tokens(const std::string& bytes, const std::string& where);

// Length-grouped batches, as the Hugging Face Trainer's group_by_length (its LengthGroupedSampler) makes them: `order`
// (an epoch's shuffled order) cut into mega-batches of min(rows / (4 x batch_size), 50) batches (at least one), each
// sorted by length, longest first (a stable sort: ties keep the shuffled order), so a batch pads to lengths close
// to its own; the longest row of the epoch is swapped to the very first place (an out-of-memory shows at once). The
// same rows, a pure function of its arguments: resume and k-fold stay exact.
std::vector<int64_t> length_grouped_order(std::vector<int64_t> order, const TokenizedRows& t, int64_t batch_size);

}  // namespace kg::data
