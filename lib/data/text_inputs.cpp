#include "data/text_inputs.h"

#include <algorithm>
#include <filesystem>

#include <ATen/ATen.h>

#include "core/error.h"
#include "core/fs.h"
#include "core/sha256.h"

namespace kg::data {

std::string tokenizer_files_hash(const std::string& folder) {
  static const char* const kFiles[] = {
      "tokenizer.json",          "spm.model",        "vocab.txt", "merges.txt", "vocab.json", "tokenizer_config.json",
      "special_tokens_map.json", "added_tokens.json"};
  std::string all;
  std::error_code ec;
  for (const char* f : kFiles) {
    const auto p = std::filesystem::path(folder) / f;
    if (!std::filesystem::is_regular_file(p, ec)) continue;
    all += std::string(f) + ":" + sha256_file_hex(p.string()) + "\n";
  }
  return sha256_hex(all);
}

TextInputs::TextInputs(const DataOptions& o, const Table& t, const TextSpec& spec)
    : window_pool_(o.window_pool), pad_id_(spec.pad_id) {
  KG_ASSERT(t.is_text(), "TextInputs over a table without text");
  const text::Tokenizer tok = text::Tokenizer::from_folder(spec.folder);
  // One text column is the table's texts as they are; a pair is split into its two columns.
  std::vector<std::string> first, second;
  if (t.text_dim > 1)
    for (int64_t r = 0; r < t.size(); ++r) {
      first.push_back(t.text(r, 0));
      second.push_back(t.text(r, 1));
    }
  TokenizeRequest req;
  req.tokenizer = &tok;
  req.tokenizer_id = tokenizer_files_hash(spec.folder);
  req.first = t.text_dim > 1 ? &first : &t.texts;
  req.second = t.text_dim > 1 ? &second : nullptr;
  req.max_length = o.max_length;
  req.side = o.truncation_side == "left" ? text::TruncationOptions::kLeft : text::TruncationOptions::kRight;
  req.strategy = text::truncation_strategy(o.truncation, "data.truncation");
  req.stride = o.stride;
  req.where = [&t](size_t i) { return t.rows[i].where + " (id " + t.rows[i].id + ")"; };
  req.threads = spec.threads;
  tokens_ = spec.cache_dir.empty() ? tokenize_rows(req) : tokenize_rows_cached(req, spec.cache_dir, &note_);
  for (int64_t r = 0; !tokens_.windows.empty() && r < tokens_.rows(); ++r)
    row_of_.insert(row_of_.end(), static_cast<size_t>(tokens_.entries_of(r)), r);
}

std::vector<int64_t> TextInputs::samples(const std::vector<int64_t>& rows) const {
  if (tokens_.windows.empty()) return rows;
  std::vector<int64_t> out;
  out.reserve(rows.size());
  for (int64_t r : rows)
    for (int64_t e = tokens_.first_entry(r); e < tokens_.first_entry(r) + tokens_.entries_of(r); ++e) out.push_back(e);
  return out;
}

model::Inputs TextInputs::batch(const std::vector<int64_t>& rows, bool pin_memory) const {  // rows: entries
  const auto n = static_cast<int64_t>(rows.size());
  int64_t longest = 0;
  for (int64_t r : rows) longest = std::max(longest, tokens_.length(r));
  const int64_t len = std::max<int64_t>(8, (longest + 7) / 8 * 8);
  const auto opts = at::TensorOptions().dtype(at::kLong).pinned_memory(pin_memory);
  model::Inputs in;
  in.ids = at::full({n, len}, pad_id_, opts);
  in.mask = at::zeros({n, len}, opts);
  in.type_ids = at::zeros({n, len}, opts);
  int64_t* ids = in.ids.data_ptr<int64_t>();
  int64_t* mask = in.mask.data_ptr<int64_t>();
  int64_t* types = in.type_ids.data_ptr<int64_t>();
  for (int64_t i = 0; i < n; ++i) {
    const int64_t r = rows[static_cast<size_t>(i)];
    const auto begin = static_cast<size_t>(tokens_.offsets[static_cast<size_t>(r)]);
    const int64_t l = tokens_.length(r);
    for (int64_t j = 0; j < l; ++j) {
      ids[i * len + j] = tokens_.ids[begin + static_cast<size_t>(j)];
      mask[i * len + j] = 1;
      types[i * len + j] = tokens_.types[begin + static_cast<size_t>(j)];
    }
  }
  return in;
}

std::vector<int64_t> TextInputs::grouped(std::vector<int64_t> order, int64_t batch_size) const {
  return length_grouped_order(std::move(order), tokens_, batch_size);
}

std::vector<size_t> TextInputs::prediction_order(const std::vector<int64_t>& rows) const {
  std::vector<size_t> order(rows.size());
  for (size_t i = 0; i < rows.size(); ++i) order[i] = i;
  auto len = [&](int64_t r) { return tokens_.length(tokens_.first_entry(r)); };
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return len(rows[a]) > len(rows[b]); });
  return order;
}

std::string TextInputs::describe() const {
  const double mean =
      tokens_.size() > 0 ? static_cast<double>(tokens_.ids.size()) / static_cast<double>(tokens_.size()) : 0.0;
  return "tokens  " + tokens_.truncation_note() + "; " + std::to_string(static_cast<int64_t>(mean + 0.5)) +
         (tokens_.windows.empty()
              ? " tokens a row on average"
              : " tokens a window on average; predictions pool a row's windows by their " + window_pool_) +
         (note_.empty() ? "" : "; " + note_);
}

}  // namespace kg::data
