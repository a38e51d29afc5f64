#include "data/mlm_masking.h"

#include <algorithm>
#include <cmath>
#include <random>
#include <sstream>

#include <ATen/ATen.h>

#include "core/error.h"
#include "text/tokenizer.h"

namespace kg::data {

namespace {
uint64_t splitmix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

bool starts_with(const std::string& s, const char* prefix) { return s.rfind(prefix, 0) == 0; }

// How the vocabulary marks words: WordPiece's "##" on continuations, or a word-start mark (sentencepiece's U+2581,
// byte-level BPE's U+0120) on the first piece of a word; none: every token is a word.
enum class Marks { kContinuation, kWordStart, kNone };
Marks marks_of(const std::vector<std::string>& tokens, std::string* start_mark) {
  size_t hashes = 0, meta = 0, byte = 0;
  for (const auto& t : tokens) {
    hashes += starts_with(t, "##");
    meta += starts_with(t, "\xe2\x96\x81");  // U+2581
    byte += starts_with(t, "\xc4\xa0");      // U+0120
  }
  const size_t most = std::max({hashes, meta, byte});
  if (most * 20 < tokens.size()) return Marks::kNone;  // under 5 % of the vocabulary: no convention
  if (most == hashes) return Marks::kContinuation;
  *start_mark = most == meta ? "\xe2\x96\x81" : "\xc4\xa0";
  return Marks::kWordStart;
}
}  // namespace

MaskVocabulary MaskVocabulary::from_folder(const std::string& folder) {
  const text::Tokenizer tok = text::Tokenizer::from_folder(folder);
  const std::vector<std::string> tokens = tok.id_to_token();
  MaskVocabulary v;
  v.size = static_cast<int64_t>(tokens.size());
  for (const char* m : {"[MASK]", "<mask>"}) {
    auto it = std::find(tokens.begin(), tokens.end(), m);
    if (it != tokens.end()) {
      v.mask_id = it - tokens.begin();
      break;
    }
  }
  KG_CHECK(v.mask_id >= 0, ConfigError, "model.pretrained = \"", folder,
           "\": its tokenizer has no mask token ([MASK] or <mask>), so masked-language modelling cannot mask a "
           "token; pre-train a model whose tokenizer has one");
  v.special.assign(tokens.size(), 0);
  for (int64_t id : tok.special_ids())
    if (id >= 0 && id < v.size) v.special[static_cast<size_t>(id)] = 1;
  v.continues.assign(tokens.size(), 0);
  std::string start_mark;
  const Marks marks = marks_of(tokens, &start_mark);
  for (size_t i = 0; i < tokens.size(); ++i) {
    if (v.special[i] || tokens[i].empty()) continue;
    if (marks == Marks::kContinuation) v.continues[i] = starts_with(tokens[i], "##");
    if (marks == Marks::kWordStart) v.continues[i] = !starts_with(tokens[i], start_mark.c_str());
  }
  return v;
}

MaskingCollator::MaskingCollator(std::unique_ptr<Collator> inner, MaskVocabulary vocab, const MaskingOptions& o)
    : inner_(std::move(inner)), vocab_(std::move(vocab)), o_(o) {
  KG_ASSERT(inner_ && vocab_.mask_id >= 0, "a masking collator without a collator or a mask token");
}

std::vector<int64_t> MaskingCollator::choose(const int64_t* ids, int64_t n, uint64_t rng_seed) const {
  auto special = [&](int64_t id) {
    return id < 0 || id >= vocab_.size || vocab_.special[static_cast<size_t>(id)] != 0;
  };
  // Words: runs of candidate tokens, a new one at each token that does not continue the one before.
  std::vector<std::vector<int64_t>> words;
  int64_t candidates = 0;
  for (int64_t i = 0; i < n; ++i) {
    if (special(ids[i])) continue;
    ++candidates;
    const bool joins = o_.whole_word && !words.empty() && words.back().back() == i - 1 &&
                       vocab_.continues[static_cast<size_t>(ids[i])] != 0;
    if (joins)
      words.back().push_back(i);
    else
      words.push_back({i});
  }
  std::mt19937_64 rng(rng_seed);
  std::vector<int64_t> chosen;
  if (!o_.whole_word) {
    std::bernoulli_distribution pick(o_.probability);
    for (const auto& w : words)
      if (pick(rng)) chosen.push_back(w.front());
    return chosen;
  }
  // transformers' _whole_word_mask: words in random order, each taken while the count stays within the target.
  const auto target =
      std::max<int64_t>(candidates > 0 ? 1 : 0, std::llround(static_cast<double>(candidates) * o_.probability));
  std::shuffle(words.begin(), words.end(), rng);
  for (const auto& w : words) {
    if (static_cast<int64_t>(chosen.size()) >= target) break;
    if (static_cast<int64_t>(chosen.size() + w.size()) > target) continue;
    chosen.insert(chosen.end(), w.begin(), w.end());
  }
  std::sort(chosen.begin(), chosen.end());
  return chosen;
}

model::Inputs MaskingCollator::batch(const std::vector<int64_t>& rows, bool pin_memory) const {
  model::Inputs in = inner_->batch(rows, false);
  const int64_t n = in.ids.size(0), len = in.ids.size(1);
  in.predict = at::zeros({n, len}, at::kBool);
  int64_t* ids = in.ids.data_ptr<int64_t>();
  const int64_t* mask = in.mask.defined() ? in.mask.data_ptr<int64_t>() : nullptr;
  bool* predict = in.predict.data_ptr<bool>();
  // One seed per batch from the run's seed and the rows, in order: what makes the masks reproducible.
  uint64_t h = splitmix(o_.seed);
  for (int64_t r : rows) h = splitmix(h ^ static_cast<uint64_t>(r));
  for (int64_t i = 0; i < n; ++i) {
    int64_t real = len;
    if (mask)
      while (real > 0 && mask[i * len + real - 1] == 0) --real;
    int64_t* row = ids + i * len;
    const uint64_t row_seed = splitmix(h + static_cast<uint64_t>(i));
    std::mt19937_64 rng(splitmix(row_seed));
    std::uniform_real_distribution<double> u(0.0, 1.0);
    std::uniform_int_distribution<int64_t> any(0, vocab_.size - 1);
    for (int64_t j : choose(row, real, row_seed)) {
      predict[i * len + j] = true;
      const double x = u(rng);  // 80 % the mask token, 10 % a random token, 10 % unchanged
      if (x < 0.8)
        row[j] = vocab_.mask_id;
      else if (x < 0.9)
        row[j] = any(rng);
    }
  }
  if (pin_memory) in = in.map([](const at::Tensor& t) { return t.pin_memory(); });
  return in;
}

at::Tensor MaskingCollator::targets(const std::vector<int64_t>& rows, const model::Inputs& made) const {
  const at::Tensor original = inner_->batch(rows, false).ids;
  return at::where(made.predict.cpu(), original, at::full_like(original, -100));
}

std::string MaskingCollator::describe() const {
  std::ostringstream s;
  s << inner_->describe() << "; " << (o_.whole_word ? "whole words" : "tokens") << " masked, "
    << std::lround(o_.probability * 100) << " % of each text (80 % mask, 10 % random, 10 % kept)";
  return s.str();
}

}  // namespace kg::data
