// Tokenizer::encode_windows: tokenizers' Encoding::truncate with a stride (tokenizers 0.23, encoding.rs), whose
// overflowing parts transformers returns with return_overflowing_tokens=True, each post-processed by the template.
#include <algorithm>
#include <utility>

#include "core/error.h"
#include "text/tokenizer.h"
#include "text/unicode.h"

namespace kg::text {

std::vector<Encoding> Tokenizer::encode_windows(std::string_view text, size_t max_length, size_t stride,
                                                TruncationOptions::Direction direction) const {
  decode_utf8(text, "the text");  // the byte offset of bad input, before any work
  const std::vector<int64_t> ids = tokenize(text);
  const size_t added = special_tokens(false);
  const size_t budget = max_length > added ? max_length - added : 0;
  KG_CHECK(stride < budget, ConfigError, "data.stride = ", stride, ": a window of data.max_length = ", max_length,
           " tokens holds ", budget, " of the text's (", added,
           " are the tokenizer's special tokens), and consecutive windows must share fewer than that");
  std::vector<std::pair<size_t, size_t>> parts;  // [start, stop) of each window in `ids`
  const size_t n = ids.size(), step = budget - stride;
  if (n <= budget) {
    parts.emplace_back(0, n);
  } else if (direction == TruncationOptions::kRight) {
    for (size_t start = 0; start < n; start += step) {
      const size_t stop = std::min(start + budget, n);
      parts.emplace_back(start, stop);
      if (stop == n) break;
    }
  } else {
    // (0..n).rev().step_by(step): window ends n, n - step, ...; each starts budget before its end, the last at 0.
    for (size_t last = n; last >= 1; last = last > step ? last - step : 0) {
      const size_t start = last < budget ? 0 : last - budget;
      parts.emplace_back(start, last);
      if (start == 0 || last <= step) break;
    }
  }
  std::vector<Encoding> out;
  out.reserve(parts.size());
  for (const auto& [start, stop] : parts) {
    Encoding e;
    for (const auto& p : single_) {
      if (p.sequence < 0) {
        e.ids.insert(e.ids.end(), p.ids.begin(), p.ids.end());
        e.type_ids.insert(e.type_ids.end(), p.ids.size(), p.type_id);
      } else {
        e.ids.insert(e.ids.end(), ids.begin() + static_cast<std::ptrdiff_t>(start),
                     ids.begin() + static_cast<std::ptrdiff_t>(stop));
        e.type_ids.insert(e.type_ids.end(), stop - start, p.type_id);
      }
    }
    e.attention_mask.assign(e.ids.size(), 1);
    out.push_back(std::move(e));
  }
  return out;
}

}  // namespace kg::text
