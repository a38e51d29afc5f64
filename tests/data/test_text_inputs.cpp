// The text modality's inputs (lib/data/text_inputs.h): text columns in the table (pairs, bad rows), a batch padded to
// its longest row rounded up to a multiple of 8 with the mask and type ids, the token cache keyed by the tokenizer's
// files, and the length-grouped order being the same rows.
#include <catch2/catch.hpp>

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include <ATen/ATen.h>

#include "core/fs.h"
#include "data/csv.h"
#include "data/table.h"
#include "data/text_inputs.h"
#include "core/error.h"
#include "support/errors.h"
#include "support/temp_dir.h"
#include "test_paths.h"

namespace {
namespace KG_UNITY_ID {  // each test file's own names in a unity batch (CMakeLists.txt)

namespace fs = std::filesystem;

const std::string kSpm = KGTRAIN_SOURCE_DIR "/tests/text/fixtures/deberta_spm";

struct TextTable {
  kg::test::TempDir dir;
  kg::data::CsvTable csv;
  kg::data::DataOptions o;
  kg::data::Table t;
  std::vector<kg::data::BadRow> bad;
  explicit TextTable(const std::string& body, std::vector<std::string> cols = {"text"}) {
    o.text_cols = std::move(cols);
    o.max_length = 16;
    o.root = dir.path();
    dir.write("train.csv", body);
    csv = kg::data::read_csv(dir / "train.csv");
    build();
  }
  // A cell the CSV reader would refuse (it reads UTF-8 only), as a Parquet or Arrow table can hold it.
  TextTable(const std::vector<std::string>& header, std::vector<std::vector<std::string>> rows) {
    o.text_cols = {"text"};
    o.max_length = 16;
    o.root = dir.path();
    csv.path = "t.parquet";
    csv.header = header;
    csv.rows = std::move(rows);
    build();
  }
  void build() {
    kg::data::TableSource src;
    src.csv = &csv;
    src.id_col = "id";
    src.label_cols = {"label"};
    t = kg::data::build_table(o, src, nullptr, false, bad);
  }
};

TEST_CASE("text inputs: the table keeps each row's texts; bad text is a bad row naming it", "[unit][data][text]") {
  TextTable tt({"id", "text", "other", "label"}, {{"a", "hello world", "second", "x"},
                                                  {"b", "", "s", "x"},
                                                  {"c", "caf\xe9", "s", "x"},
                                                  {"d", "ok \xe2\x82\xac", "s", "x"}});
  REQUIRE(tt.t.is_text());
  CHECK(tt.t.text(0) == "hello world");
  CHECK(tt.t.text(3) == "ok \xe2\x82\xac");
  REQUIRE(tt.bad.size() == 2);
  CHECK(tt.bad[0].reason == "empty text in text");
  CHECK(tt.bad[1].reason.find("not UTF-8 (byte 3)") != std::string::npos);
  CHECK(tt.t.rows[0].image.empty());  // no image path is looked for
  // The bad-row policy keeps the texts aligned with the rows left.
  kg::data::apply_bad_row_policy(tt.t, tt.bad, "skip");
  REQUIRE(tt.t.size() == 2);
  CHECK(tt.t.text(1) == "ok \xe2\x82\xac");

  TextTable pair("id,q,a,label\n1,first one,second one,x\n", {"q", "a"});
  CHECK(pair.t.text_dim == 2);
  CHECK(pair.t.text(0, 1) == "second one");
}

TEST_CASE("text inputs: UTF-8 validation refuses overlongs, surrogates and cut sequences", "[unit][data][text]") {
  CHECK(kg::data::invalid_utf8_at("plain \xc3\xa9 \xf0\x9f\x98\x80") == std::string::npos);
  CHECK(kg::data::invalid_utf8_at("\xc0\xaf") == 0);          // overlong '/'
  CHECK(kg::data::invalid_utf8_at("ab\xed\xa0\x80") == 2);    // a surrogate
  CHECK(kg::data::invalid_utf8_at("abc\xe2\x82") == 3);       // cut short
  CHECK(kg::data::invalid_utf8_at("\xf4\x90\x80\x80") == 0);  // past U+10FFFF
  CHECK(kg::data::invalid_utf8_at("x\x80") == 1);             // a lone continuation byte
}

TEST_CASE("text inputs: a batch pads to its longest row, rounded up to 8, with mask and type ids",
          "[unit][data][text]") {
  std::string body = "id,text,label\n";
  const std::vector<std::string> texts{"the fox", "the quick brown fox jumps over the lazy dog and more words here",
                                       "dog"};
  for (size_t i = 0; i < texts.size(); ++i) body += std::to_string(i) + "," + texts[i] + ",x\n";
  TextTable tt(body);
  REQUIRE(tt.bad.empty());
  kg::data::TextSpec spec;
  spec.folder = kSpm;
  spec.pad_id = 0;
  spec.cache_dir = tt.dir / "cache";
  kg::data::TextInputs in(tt.o, tt.t, spec);
  const auto& tok = in.tokens();
  REQUIRE(tok.size() == 3);
  CHECK(tok.length(1) == 16);  // truncated at data.max_length
  CHECK(tok.truncated == 1);
  auto b = in.batch({0, 2});
  const int64_t longest = std::max(tok.length(0), tok.length(2));
  CHECK(b.ids.size(1) == (longest + 7) / 8 * 8);
  CHECK(b.mask.sum().item<int64_t>() == tok.length(0) + tok.length(2));
  for (int64_t j = tok.length(0); j < b.ids.size(1); ++j) {
    CHECK(b.ids[0][j].item<int64_t>() == 0);
    CHECK(b.mask[0][j].item<int64_t>() == 0);
  }
  CHECK(b.ids[0][0].item<int64_t>() == 1);  // [CLS]
  CHECK(b.type_ids.sum().item<int64_t>() == 0);
  auto b1 = in.batch({1});
  CHECK(b1.ids.size(1) == 16);
  // The cache: the same request reads the file; another max_length does not.
  kg::data::TextInputs again(tt.o, tt.t, spec);
  CHECK(again.describe().find("tokens from the cache") != std::string::npos);
  CHECK(again.tokens().ids == tok.ids);
  tt.o.max_length = 12;
  kg::data::TextInputs other(tt.o, tt.t, spec);
  CHECK(other.describe().find("tokenized, cached in") != std::string::npos);
  // Grouping by length visits the same rows.
  std::vector<int64_t> order{0, 1, 2};
  auto g = in.grouped(order, 1);
  std::sort(g.begin(), g.end());
  CHECK(g == order);
}

TEST_CASE("text inputs: data.stride makes a row's windows its samples, cached under their own key",
          "[unit][data][text]") {
  std::string body = "id,text,label\n";
  const std::vector<std::string> texts{"the fox", "the quick brown fox jumps over the lazy dog and more words here",
                                       "dog", "a day in spring with some wind and a lazy dog under the porch again"};
  for (size_t i = 0; i < texts.size(); ++i) body += std::to_string(i) + "," + texts[i] + ",x\n";
  TextTable tt(body);
  REQUIRE(tt.bad.empty());
  kg::data::TextSpec spec;
  spec.folder = kSpm;
  spec.cache_dir = tt.dir / "cache";
  tt.o.max_length = 8;
  tt.o.stride = 2;
  tt.o.window_pool = "max";
  kg::data::TextInputs in(tt.o, tt.t, spec);
  const auto& tok = in.tokens();
  REQUIRE(tok.rows() == 4);
  CHECK(tok.entries_of(0) == 1);
  CHECK(tok.entries_of(1) > 1);
  CHECK(tok.entries_of(2) == 1);
  CHECK(tok.truncated == 2);
  CHECK(in.window_pool() == "max");
  CHECK(in.describe().find("50 % of rows longer than 8 (2 of 4), ") != std::string::npos);
  // Each row's windows, the tokenizer's.
  const auto t = kg::text::Tokenizer::from_folder(kSpm);
  for (int64_t r = 0; r < 4; ++r) {
    const auto w = t.encode_windows(texts[static_cast<size_t>(r)], 8, 2, kg::text::TruncationOptions::kRight);
    REQUIRE(tok.entries_of(r) == static_cast<int64_t>(w.size()));
    for (size_t k = 0; k < w.size(); ++k) {
      const int64_t e = tok.first_entry(r) + static_cast<int64_t>(k);
      CHECK(std::vector<int64_t>(tok.ids.begin() + tok.offsets[static_cast<size_t>(e)],
                                 tok.ids.begin() + tok.offsets[static_cast<size_t>(e) + 1]) == w[k].ids);
      CHECK(in.row_of(e) == r);
      CHECK(in.window_of(e) == static_cast<int64_t>(k));
    }
  }
  // Samples of rows: each row's windows, consecutive, in the rows' order.
  const auto s = in.samples({3, 0});
  REQUIRE(static_cast<int64_t>(s.size()) == tok.entries_of(3) + 1);
  CHECK(s.front() == tok.first_entry(3));
  CHECK(s.back() == 0);
  // The stride is part of the cache key; the same request reads its file back, windows included.
  kg::data::TextInputs again(tt.o, tt.t, spec);
  CHECK(again.describe().find("tokens from the cache") != std::string::npos);
  CHECK(again.tokens().windows == tok.windows);
  tt.o.stride = 3;
  kg::data::TextInputs other(tt.o, tt.t, spec);
  CHECK(other.describe().find("tokenized, cached in") != std::string::npos);
  tt.o.stride.reset();
  kg::data::TextInputs cut(tt.o, tt.t, spec);
  CHECK(cut.tokens().windows.empty());
  CHECK(cut.window_pool().empty());
  CHECK(cut.samples({3, 0}) == std::vector<int64_t>{3, 0});
  // A stride a window cannot hold, and a pair: config errors naming data.stride.
  tt.o.stride = 6;  // 8 - [CLS] - [SEP] = 6 text tokens a window
  CHECK(kg::test::error_of<kg::ConfigError>([&] {
          kg::data::TextInputs bad(tt.o, tt.t, spec);
        }).find("data.stride = 6: a window of data.max_length = 8 tokens holds 6") != std::string::npos);
  TextTable pair("id,q,a,label\n1,first one,second one,x\n", {"q", "a"});
  pair.o.stride = 1;
  CHECK(kg::test::error_of<kg::ConfigError>([&] {
          kg::data::TextInputs bad(pair.o, pair.t, spec);
        }).find("data.stride = 1: sliding windows cut one text") != std::string::npos);
}

}  // namespace KG_UNITY_ID
}  // namespace
