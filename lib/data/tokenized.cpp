#include "data/tokenized.h"

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <mutex>

#include "core/error.h"
#include "core/fs.h"
#include "core/parallel_for.h"
#include "core/sha256.h"
#include "core/strings.h"

namespace kg::data {

namespace {

// Version 2 adds the row -> windows offsets; a version 1 file (no windows) still reads.
constexpr char kTokensMagic[8] = {'K', 'G', 'T', 'O', 'K', 'E', 'N', '2'};
constexpr char kTokensMagicV1[8] = {'K', 'G', 'T', 'O', 'K', 'E', 'N', '1'};

text::Encoding encode_row(const text::Tokenizer& tok, const TokenizeRequest& r, size_t i) {
  return r.second ? tok.encode_pair((*r.first)[i], (*r.second)[i]) : tok.encode((*r.first)[i]);
}

template <class T>
void put(std::string& out, const T* p, size_t n) {
  out.append(reinterpret_cast<const char*>(p), n * sizeof(T));
}

}  // namespace

std::string TokenizedRows::truncation_note() const {
  const std::string at = std::to_string(max_length);
  const std::string per_row =
      windows.empty()
          ? ""
          : ", " +
                format_significant(static_cast<double>(size()) / static_cast<double>(std::max<int64_t>(1, rows())), 3) +
                " windows a row on average";
  if (truncated == 0) return (windows.empty() ? "no row truncated at " : "no row longer than ") + at + per_row;
  const double pct = 100.0 * static_cast<double>(truncated) / static_cast<double>(std::max<int64_t>(1, rows()));
  const std::string p = pct < 1 ? "<1" : std::to_string(static_cast<int64_t>(pct + 0.5));
  return p + (windows.empty() ? " % of rows truncated at " : " % of rows longer than ") + at + " (" +
         std::to_string(truncated) + " of " + std::to_string(rows()) + ")" + per_row;
}

TokenizedRows tokenize_rows(const TokenizeRequest& r) {
  KG_ASSERT(r.tokenizer && r.first, "tokenize_rows without a tokenizer or texts");
  KG_ASSERT(!r.second || r.second->size() == r.first->size(), "tokenize_rows: pairs of unequal lengths");
  KG_CHECK(r.max_length >= 2, ConfigError, "data.max_length: expected at least 2 tokens, got ", r.max_length);
  // Untruncated first: a row longer than max_length is counted, then encoded again truncated (tokenizers truncates
  // the full encoding too, so the result is the same as encoding with truncation on).
  text::Tokenizer whole = *r.tokenizer;
  whole.set_truncation(std::nullopt);
  text::Tokenizer cut = *r.tokenizer;
  text::TruncationOptions t;
  t.max_length = static_cast<size_t>(r.max_length);
  t.strategy = r.strategy;
  t.direction = r.side;
  cut.set_truncation(t);

  KG_CHECK(!r.stride || !r.second, ConfigError, "data.stride = ", r.stride.value_or(0),
           ": sliding windows cut one text, and data.text_cols names a pair; window a single column (or join the two "
           "into one), or leave data.stride unset to truncate the pair");
  KG_CHECK(!r.stride || *r.stride >= 0, ConfigError, "data.stride = ", r.stride.value_or(0),
           ": expected the tokens consecutive windows share, 0 or more");
  if (r.stride)  // the bound, before any work (encode_windows checks it again per row)
    (void)r.tokenizer->encode_windows("", static_cast<size_t>(r.max_length), static_cast<size_t>(*r.stride), r.side);
  const size_t n = r.first->size();
  std::vector<std::vector<text::Encoding>> enc(n);  // a row's encoding, or its windows
  std::vector<char> was_cut(n, 0);
  parallel_for(n, std::max(1, r.threads), [&](size_t i, int) {
    try {
      if (r.stride) {
        enc[i] = whole.encode_windows((*r.first)[i], static_cast<size_t>(r.max_length), static_cast<size_t>(*r.stride),
                                      r.side);
        was_cut[i] = enc[i].size() > 1;
        return;
      }
      enc[i] = {encode_row(whole, r, i)};
      if (static_cast<int64_t>(enc[i][0].ids.size()) > r.max_length) {
        was_cut[i] = 1;
        enc[i] = {encode_row(cut, r, i)};
      }
    } catch (const DataError& e) {
      throw DataError((r.where ? r.where(i) : "row " + std::to_string(i + 1)) + ": " + e.what());
    }
  });
  TokenizedRows out;
  out.max_length = r.max_length;
  out.offsets.push_back(0);
  if (r.stride) out.windows.push_back(0);
  size_t total = 0;
  for (const auto& w : enc)
    for (const auto& e : w) total += e.ids.size();
  out.ids.reserve(total);
  out.types.reserve(total);
  for (size_t i = 0; i < n; ++i) {
    for (const auto& e : enc[i]) {
      for (size_t k = 0; k < e.ids.size(); ++k) {
        out.ids.push_back(static_cast<int32_t>(e.ids[k]));
        out.types.push_back(static_cast<uint8_t>(e.type_ids[k]));
      }
      out.offsets.push_back(static_cast<int64_t>(out.ids.size()));
    }
    if (r.stride) out.windows.push_back(static_cast<int64_t>(out.offsets.size()) - 1);
    out.truncated += was_cut[i];
  }
  return out;
}

std::string tokenize_key(const TokenizeRequest& r) {
  Sha256 h;
  auto field = [&](std::string_view s) {
    const uint64_t len = s.size();
    h.update(&len, sizeof len);
    h.update(s);
  };
  field(r.tokenizer_id);
  field(std::to_string(r.max_length) + "/" + std::to_string(r.side) + "/" + std::to_string(r.strategy) + "/" +
        (r.second ? "pair" : "single") + "/" + std::to_string(r.first->size()) +
        (r.stride ? "/stride " + std::to_string(*r.stride) : ""));
  for (size_t i = 0; i < r.first->size(); ++i) {
    field((*r.first)[i]);
    if (r.second) field((*r.second)[i]);
  }
  return h.hex_digest();
}

std::string serialize_tokens(const TokenizedRows& t) {
  std::string out(kTokensMagic, sizeof kTokensMagic);
  const int64_t head[5] = {t.size(), static_cast<int64_t>(t.ids.size()), t.truncated, t.max_length,
                           static_cast<int64_t>(t.windows.size())};
  put(out, head, 5);
  put(out, t.offsets.data(), t.offsets.size());
  put(out, t.windows.data(), t.windows.size());
  put(out, t.ids.data(), t.ids.size());
  put(out, t.types.data(), t.types.size());
  return out;
}

TokenizedRows deserialize_tokens(const std::string& bytes, const std::string& where) {
  size_t pos = 0;
  auto take = [&](void* dst, size_t n) {
    KG_CHECK(n <= bytes.size() - pos, DataError, where, ": a tokens cache cut short (", bytes.size(), " bytes)");
    if (n == 0) return;  // an empty vector's data() may be null, which memcpy must not get
    std::memcpy(dst, bytes.data() + pos, n);
    pos += n;
  };
  char magic[sizeof kTokensMagic];
  KG_CHECK(bytes.size() >= sizeof magic, DataError, where, ": not a tokens cache");
  take(magic, sizeof magic);
  const bool v1 = std::memcmp(magic, kTokensMagicV1, sizeof magic) == 0;
  KG_CHECK(v1 || std::memcmp(magic, kTokensMagic, sizeof magic) == 0, DataError, where, ": not a tokens cache");
  int64_t head[5] = {0, 0, 0, 0, 0};
  take(head, v1 ? 4 * sizeof(int64_t) : sizeof head);
  const int64_t rows = head[0], tokens = head[1], windows = head[4];
  KG_CHECK(rows >= 0 && tokens >= 0 && windows >= 0 && head[2] >= 0 && head[2] <= rows &&
               static_cast<uint64_t>(rows + 1 + windows) * 8 + static_cast<uint64_t>(tokens) * 5 == bytes.size() - pos,
           DataError, where, ": a tokens cache of inconsistent size");
  TokenizedRows t;
  t.truncated = head[2];
  t.max_length = head[3];
  t.offsets.resize(static_cast<size_t>(rows) + 1);
  t.windows.resize(static_cast<size_t>(windows));
  t.ids.resize(static_cast<size_t>(tokens));
  t.types.resize(static_cast<size_t>(tokens));
  take(t.offsets.data(), t.offsets.size() * sizeof(int64_t));
  take(t.windows.data(), t.windows.size() * sizeof(int64_t));
  take(t.ids.data(), t.ids.size() * sizeof(int32_t));
  take(t.types.data(), t.types.size());
  bool ok = t.offsets.front() == 0 && t.offsets.back() == tokens;
  for (size_t i = 1; ok && i < t.offsets.size(); ++i) ok = t.offsets[i] >= t.offsets[i - 1];
  KG_CHECK(ok, DataError, where, ": a tokens cache whose row offsets are out of order");
  ok = t.windows.empty() || (t.windows.front() == 0 && t.windows.back() == rows);
  for (size_t i = 1; ok && i < t.windows.size(); ++i) ok = t.windows[i] > t.windows[i - 1];
  KG_CHECK(ok, DataError, where, ": a tokens cache whose windows are out of order");
  return t;
}

TokenizedRows tokenize_rows_cached(const TokenizeRequest& r, const std::string& dir, std::string* note) {
  const std::string path = (std::filesystem::path(dir) / ("tokens-" + tokenize_key(r) + ".bin")).string();
  std::error_code ec;
  if (std::filesystem::is_regular_file(path, ec)) {
    try {
      TokenizedRows t = deserialize_tokens(read_file(path), path);
      if (t.rows() == static_cast<int64_t>(r.first->size()) && t.windows.empty() == !r.stride) {
        if (note) *note = "tokens from the cache " + path;
        return t;
      }
    } catch (const DataError&) {
      // A damaged cache is made again below.
    }
  }
  TokenizedRows t = tokenize_rows(r);
  try {
    write_file_atomic(path, serialize_tokens(t));
    if (note) *note = "tokenized, cached in " + path;
  } catch (const DataError& e) {
    if (note) *note = std::string("tokenized; not cached (") + e.what() + ")";
  }
  return t;
}

std::vector<int64_t> length_grouped_order(std::vector<int64_t> order, const TokenizedRows& t, int64_t batch_size) {
  const int64_t n = static_cast<int64_t>(order.size());
  if (n == 0 || batch_size <= 0) return order;
  const int64_t mult = std::max<int64_t>(1, std::min<int64_t>(n / (batch_size * 4), 50));
  const int64_t mega = mult * batch_size;
  auto longer = [&](int64_t a, int64_t b) { return t.length(a) > t.length(b); };
  int64_t best_mega = 0;
  for (int64_t start = 0; start < n; start += mega) {
    const auto first = order.begin() + start, last = order.begin() + std::min(n, start + mega);
    std::stable_sort(first, last, longer);
    if (t.length(*first) > t.length(order[static_cast<size_t>(best_mega)])) best_mega = start;
  }
  std::swap(order[0], order[static_cast<size_t>(best_mega)]);
  return order;
}

}  // namespace kg::data
