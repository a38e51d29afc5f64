// Masked-language-model batches (data/mlm_masking.h) on a hand-made vocabulary: whole words are masked whole and
// never past the target count, special tokens and padding never, the 80-10-10 split holds over many tokens, the
// targets are the original ids exactly where the network predicts, and the masks follow the seed and the rows.
#include <catch2/catch.hpp>

#include <filesystem>
#include <map>
#include <set>

#include <ATen/ATen.h>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/fs.h"
#include "data/mlm_masking.h"
#include "support/text_fixtures.h"
#include "test_paths.h"
#include "support/temp_dir.h"

namespace {
namespace KG_UNITY_ID {  // each test file's own names in a unity batch (CMakeLists.txt)

using kg::data::MaskingCollator;
using kg::data::MaskingOptions;
using kg::data::MaskVocabulary;

// Ids: 0 [PAD], 1 [CLS], 2 [SEP], 3 [MASK]; 4..49 word starts, 50..99 continuations ("##...").
constexpr int64_t kPad = 0, kCls = 1, kSep = 2, kMask = 3, kVocab = 100;

MaskVocabulary vocabulary() {
  MaskVocabulary v;
  v.mask_id = kMask;
  v.size = kVocab;
  v.special.assign(kVocab, 0);
  v.continues.assign(kVocab, 0);
  for (int64_t s : {kPad, kCls, kSep, kMask}) v.special[static_cast<size_t>(s)] = 1;
  for (int64_t i = 50; i < kVocab; ++i) v.continues[static_cast<size_t>(i)] = 1;
  return v;
}

// Row r: [CLS], then words of 1-3 tokens (a start, then continuations), [SEP], padded to 64 in the batch.
class FakeText final : public kg::data::Collator {
 public:
  explicit FakeText(int64_t rows) {
    for (int64_t r = 0; r < rows; ++r) {
      std::vector<int64_t> ids{kCls};
      const int64_t words = 5 + r % 15;
      for (int64_t w = 0; w < words; ++w) {
        ids.push_back(4 + (r * 7 + w) % 46);
        for (int64_t c = 0; c < (r + w) % 3; ++c) ids.push_back(50 + (r + w + c) % 50);
      }
      ids.push_back(kSep);
      rows_.push_back(ids);
    }
  }
  kg::model::Inputs batch(const std::vector<int64_t>& rows, bool) const override {
    const auto n = static_cast<int64_t>(rows.size());
    kg::model::Inputs in;
    in.ids = at::full({n, 64}, kPad, at::kLong);
    in.mask = at::zeros({n, 64}, at::kLong);
    for (int64_t i = 0; i < n; ++i) {
      const auto& r = rows_[static_cast<size_t>(rows[static_cast<size_t>(i)])];
      for (size_t j = 0; j < r.size(); ++j) {
        in.ids[i][static_cast<int64_t>(j)] = r[j];
        in.mask[i][static_cast<int64_t>(j)] = 1;
      }
    }
    return in;
  }
  std::string describe() const override { return "fake tokens"; }
  std::vector<std::vector<int64_t>> rows_;
};

std::vector<int64_t> all_rows(int64_t n) {
  std::vector<int64_t> r(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) r[static_cast<size_t>(i)] = i;
  return r;
}

TEST_CASE("masking: whole words, within the target, never special tokens or padding", "[data][text][mlm]") {
  auto inner = std::make_unique<FakeText>(200);
  const auto texts = inner->rows_;
  MaskingCollator c(std::move(inner), vocabulary(), MaskingOptions{0.15, true, 7});
  const auto rows = all_rows(200);
  const auto in = c.batch(rows, false);
  const at::Tensor y = c.targets(rows, in);
  REQUIRE(in.predict.sizes() == in.ids.sizes());
  int64_t chosen_total = 0, candidates_total = 0;
  for (int64_t i = 0; i < 200; ++i) {
    const auto& t = texts[static_cast<size_t>(i)];
    const auto n = static_cast<int64_t>(t.size());
    int64_t chosen = 0;
    for (int64_t j = 0; j < 64; ++j) {
      const bool p = in.predict[i][j].item<bool>();
      // Targets: the original id where predicted, -100 elsewhere.
      CHECK(y[i][j].item<int64_t>() == (p ? t[static_cast<size_t>(j)] : -100));
      if (!p) {
        if (j < n) CHECK(in.ids[i][j].item<int64_t>() == t[static_cast<size_t>(j)]);  // untouched
        continue;
      }
      ++chosen;
      REQUIRE(j < n);                            // never padding
      CHECK(t[static_cast<size_t>(j)] != kCls);  // never a special token
      CHECK(t[static_cast<size_t>(j)] != kSep);
      // Whole words: a chosen start takes its continuations, a chosen continuation its start.
      if (j + 1 < n && t[static_cast<size_t>(j + 1)] >= 50) CHECK(in.predict[i][j + 1].item<bool>());
      if (t[static_cast<size_t>(j)] >= 50) CHECK(in.predict[i][j - 1].item<bool>());
    }
    const int64_t candidates = n - 2;
    CHECK(chosen >= 1);
    CHECK(chosen <= std::max<int64_t>(1, std::llround(candidates * 0.15)));
    chosen_total += chosen;
    candidates_total += candidates;
  }
  // Words of up to 3 tokens fill the 15 % target closely.
  CHECK(static_cast<double>(chosen_total) / static_cast<double>(candidates_total) == Approx(0.15).margin(0.02));
}

TEST_CASE("masking: 80 % mask, 10 % random, 10 % kept; reproducible from the seed and the rows", "[data][text][mlm]") {
  MaskingCollator c(std::make_unique<FakeText>(400), vocabulary(), MaskingOptions{0.3, false, 11});
  const auto rows = all_rows(400);
  const auto in = c.batch(rows, false);
  const at::Tensor y = c.targets(rows, in);
  const at::Tensor p = in.predict;
  const double n = static_cast<double>(p.sum().item<int64_t>());
  REQUIRE(n > 2000);
  const double masked = static_cast<double>((in.ids.eq(kMask) & p).sum().item<int64_t>());
  const double kept = static_cast<double>((in.ids.eq(y) & p).sum().item<int64_t>());
  CHECK(masked / n == Approx(0.8).margin(0.03));
  CHECK(kept / n == Approx(0.1 + 0.1 / kVocab).margin(0.03));  // a random draw may pick the same id
  // Token-level masking with probability 0.3 over the candidates.
  int64_t candidates = 0;
  for (int64_t r = 0; r < 400; ++r)
    candidates += static_cast<int64_t>(FakeText(400).rows_[static_cast<size_t>(r)].size()) - 2;
  CHECK(n / static_cast<double>(candidates) == Approx(0.3).margin(0.02));

  const auto again = c.batch(rows, false);
  CHECK(at::equal(again.ids, in.ids));
  CHECK(at::equal(again.predict, in.predict));
  std::vector<int64_t> reversed(rows.rbegin(), rows.rend());
  CHECK_FALSE(at::equal(c.batch(reversed, false).predict.flip(0), in.predict));  // another batch, other masks
  MaskingCollator other(std::make_unique<FakeText>(400), vocabulary(), MaskingOptions{0.3, false, 12});
  CHECK_FALSE(at::equal(other.batch(rows, false).predict, in.predict));  // another seed
}

// The word marks each kind of vocabulary uses: sentencepiece's U+2581 and byte-level BPE's U+0120 start words.
void check_marks(const MaskVocabulary& v) {
  int64_t starts = 0, continues = 0;
  for (size_t i = 0; i < v.continues.size(); ++i) (v.continues[i] ? continues : starts) += !v.special[i];
  CHECK(starts > 0);
  CHECK(continues > 0);
}

TEST_CASE("masking: the vocabulary of a sentencepiece and a byte-level BPE folder; no mask token is exit 2",
          "[data][text][mlm]") {
  kg::test::TempDir dir;
  const auto v = MaskVocabulary::from_folder(kg::test::make_tiny_deberta(dir));
  CHECK(v.mask_id == 87);  // [MASK]
  CHECK(v.special[87] == 1);
  check_marks(v);
  const std::string bpe = dir / "bpe";
  std::filesystem::create_directories(bpe);
  auto j =
      nlohmann::json::parse(kg::read_file(std::string(KGTRAIN_SOURCE_DIR) + "/tests/text/fixtures/bpe_roberta.json"));
  kg::write_file_atomic(bpe + "/tokenizer.json", j.dump());
  const auto b = MaskVocabulary::from_folder(bpe);
  CHECK(b.mask_id == 4);  // <mask>
  check_marks(b);
  // Without its <mask>: exit 2 naming the folder.
  auto& added = j["added_tokens"];
  for (size_t i = 0; i < added.size(); ++i)
    if (added[i]["content"] == "<mask>") added.erase(i);
  j["model"]["vocab"].erase("<mask>");
  kg::write_file_atomic(bpe + "/tokenizer.json", j.dump());
  try {
    MaskVocabulary::from_folder(bpe);
    FAIL("no error");
  } catch (const kg::ConfigError& e) {
    CHECK(std::string(e.what()).find("has no mask token") != std::string::npos);
    CHECK(std::string(e.what()).find(bpe) != std::string::npos);
  }
}

}  // namespace KG_UNITY_ID
}  // namespace
