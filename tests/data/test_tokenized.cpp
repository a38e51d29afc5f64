// A table's text tokenized once (lib/data/tokenized.h): every row as the tokenizer encodes it, truncation counted,
// rows named in errors, the disk cache, and the Hugging Face Trainer's length-grouped order.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/fs.h"
#include "data/tokenized.h"
#include "support/errors.h"
#include "support/temp_dir.h"

namespace {
namespace KG_UNITY_ID {  // each test file's own names in a unity batch (CMakeLists.txt)

using nlohmann::json;

// A BERT-style tokenizer.json over a vocabulary of a few words.
kg::text::Tokenizer tiny_tokenizer() {
  const std::vector<std::string> words{"[PAD]", "[UNK]", "[CLS]", "[SEP]", "the",  "quick", "brown",
                                       "fox",   "jump",  "##s",   "over",  "lazy", "dog",   "."};
  json vocab = json::object();
  for (size_t i = 0; i < words.size(); ++i) vocab[words[i]] = i;
  auto special = [](const char* id, int64_t t) { return json{{"SpecialToken", {{"id", id}, {"type_id", t}}}}; };
  auto sequence = [](const char* id, int64_t t) { return json{{"Sequence", {{"id", id}, {"type_id", t}}}}; };
  const json j = {
      {"version", "1.0"},
      {"truncation", nullptr},
      {"padding", nullptr},
      {"added_tokens", json::array()},
      {"normalizer",
       {{"type", "BertNormalizer"},
        {"clean_text", true},
        {"handle_chinese_chars", true},
        {"strip_accents", nullptr},
        {"lowercase", true}}},
      {"pre_tokenizer", {{"type", "BertPreTokenizer"}}},
      {"post_processor",
       {{"type", "TemplateProcessing"},
        {"single", {special("[CLS]", 0), sequence("A", 0), special("[SEP]", 0)}},
        {"pair", {special("[CLS]", 0), sequence("A", 0), special("[SEP]", 0), sequence("B", 1), special("[SEP]", 1)}},
        {"special_tokens",
         {{"[CLS]", {{"id", "[CLS]"}, {"ids", {2}}, {"tokens", {"[CLS]"}}}},
          {"[SEP]", {{"id", "[SEP]"}, {"ids", {3}}, {"tokens", {"[SEP]"}}}}}}}},
      {"decoder", nullptr},
      {"model",
       {{"type", "WordPiece"},
        {"unk_token", "[UNK]"},
        {"continuing_subword_prefix", "##"},
        {"max_input_chars_per_word", 100},
        {"vocab", vocab}}}};
  return kg::text::Tokenizer::from_json(j.dump(), "tiny.json");
}

std::vector<int64_t> row_ids(const kg::data::TokenizedRows& t, int64_t r) {
  return {t.ids.begin() + t.offsets[static_cast<size_t>(r)], t.ids.begin() + t.offsets[static_cast<size_t>(r) + 1]};
}

TEST_CASE("a table's texts are tokenized as the tokenizer encodes each, truncation counted", "[unit][data]") {
  const auto tok = tiny_tokenizer();
  const std::vector<std::string> a{"The quick brown fox.", "", "the lazy dog jumps over the quick brown fox", "fox"};
  const std::vector<std::string> b{"lazy dog", "the dog", "jumps", "the quick brown fox jumps over the lazy dog"};
  kg::data::TokenizeRequest r;
  r.tokenizer = &tok;
  r.tokenizer_id = "tiny";
  r.first = &a;
  r.max_length = 8;
  r.threads = 2;
  auto t = kg::data::tokenize_rows(r);
  REQUIRE(t.size() == 4);
  CHECK(row_ids(t, 0) == std::vector<int64_t>{2, 4, 5, 6, 7, 13, 3});
  CHECK(row_ids(t, 1) == std::vector<int64_t>{2, 3});
  CHECK(row_ids(t, 2) == std::vector<int64_t>{2, 4, 11, 12, 8, 9, 10, 3});  // cut to 8 at the right
  CHECK(t.truncated == 1);
  CHECK(t.truncation_note() == "25 % of rows truncated at 8 (1 of 4)");
  CHECK(std::all_of(t.types.begin(), t.types.end(), [](uint8_t v) { return v == 0; }));

  // Pairs, cut at the left, longest first: what the tokenizer itself gives with that truncation.
  r.second = &b;
  r.side = kg::text::TruncationOptions::kLeft;
  t = kg::data::tokenize_rows(r);
  auto cut = tok;
  kg::text::TruncationOptions opt;
  opt.max_length = 8;
  opt.direction = kg::text::TruncationOptions::kLeft;
  cut.set_truncation(opt);
  int64_t longer = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    INFO(i);
    const auto e = cut.encode_pair(a[i], b[i]);
    CHECK(row_ids(t, static_cast<int64_t>(i)) == e.ids);
    const std::vector<int64_t> types(t.types.begin() + t.offsets[i], t.types.begin() + t.offsets[i + 1]);
    CHECK(types == e.type_ids);
    longer += tok.encode_pair(a[i], b[i]).ids.size() > 8;
  }
  CHECK(t.truncated == longer);
  CHECK(t.truncated == 3);
}

TEST_CASE("text that is not UTF-8 is a data error naming its row", "[unit][data]") {
  const auto tok = tiny_tokenizer();
  const std::vector<std::string> a{"fox", "the \xff dog"};
  kg::data::TokenizeRequest r;
  r.tokenizer = &tok;
  r.first = &a;
  r.where = [](size_t i) { return "train.csv row " + std::to_string(i + 1) + " (line " + std::to_string(i + 2) + ")"; };
  const std::string e = kg::test::error_of<kg::DataError>([&] { kg::data::tokenize_rows(r); });
  CHECK(e.find("train.csv row 2 (line 3): ") == 0);
  CHECK(e.find("UTF-8") != std::string::npos);
  r.max_length = 1;
  CHECK(kg::test::error_of<kg::ConfigError>([&] { kg::data::tokenize_rows(r); }).find("data.max_length") !=
        std::string::npos);
}

TEST_CASE("tokens are cached on disk by what decides them, and a damaged cache is made again", "[unit][data]") {
  kg::test::TempDir dir;
  const auto tok = tiny_tokenizer();
  std::vector<std::string> a{"the quick brown fox", "lazy dog", "jumps"};
  kg::data::TokenizeRequest r;
  r.tokenizer = &tok;
  r.tokenizer_id = "tiny";
  r.first = &a;
  r.max_length = 4;
  std::string note;
  const auto first = kg::data::tokenize_rows_cached(r, dir / "cache", &note);
  CHECK(note.find("tokenized, cached in " + (dir / "cache") + "/tokens-") == 0);
  const auto again = kg::data::tokenize_rows_cached(r, dir / "cache", &note);
  CHECK(note.find("tokens from the cache") == 0);
  CHECK(again.ids == first.ids);
  CHECK(again.types == first.types);
  CHECK(again.offsets == first.offsets);
  CHECK(again.truncated == first.truncated);
  // Anything that changes the tokens changes the key.
  const std::string key = kg::data::tokenize_key(r);
  auto changed = [&](auto&& change) {
    kg::data::TokenizeRequest c = r;
    std::vector<std::string> texts = a;
    c.first = &texts;
    change(c, texts);
    return kg::data::tokenize_key(c) != key;
  };
  CHECK(changed([](auto& c, auto&) { c.max_length = 5; }));
  CHECK(changed([](auto& c, auto&) { c.tokenizer_id = "other"; }));
  CHECK(changed([](auto& c, auto&) { c.side = kg::text::TruncationOptions::kLeft; }));
  CHECK(changed([](auto&, auto& texts) { texts[2] += " "; }));
  CHECK(changed([](auto&, auto& texts) { std::swap(texts[0], texts[1]); }));
  CHECK(changed([](auto& c, auto&) { c.stride = 1; }));
  CHECK_FALSE(changed([](auto& c, auto&) { c.threads = 4; }));
  // A cache file cut short or of another kind: read errors name it; the cached call tokenizes again.
  const std::string bytes = kg::data::serialize_tokens(first);
  CHECK(kg::test::error_of<kg::DataError>([&] {
          kg::data::deserialize_tokens(bytes.substr(0, bytes.size() - 3), "x.bin");
        }).find("x.bin: ") == 0);
  CHECK(kg::test::error_of<kg::DataError>([&] { kg::data::deserialize_tokens("GIF89a..........", "y.bin"); }) ==
        "y.bin: not a tokens cache");
  const std::string path = dir / ("cache/tokens-" + key + ".bin");
  REQUIRE(kg::read_file(path) == bytes);
  kg::write_file_atomic(path, bytes.substr(0, 20));
  const auto rebuilt = kg::data::tokenize_rows_cached(r, dir / "cache", &note);
  CHECK(note.find("tokenized, cached in") == 0);
  CHECK(rebuilt.ids == first.ids);
}

TEST_CASE("data.stride: a row's windows are its entries, and they travel through the cache file", "[unit][data]") {
  const auto tok = tiny_tokenizer();
  const std::vector<std::string> a{"the lazy dog jumps over the quick brown fox", "fox", "the quick brown fox."};
  kg::data::TokenizeRequest r;
  r.tokenizer = &tok;
  r.first = &a;
  r.max_length = 6;  // 4 text tokens a window
  r.stride = 1;
  const auto t = kg::data::tokenize_rows(r);
  REQUIRE(t.rows() == 3);
  CHECK(t.windows == std::vector<int64_t>{0, 3, 4, 6});  // row 0: 10 tokens, [0,4) [3,7) [6,10)
  CHECK(t.truncated == 2);
  CHECK(row_ids(t, 0) == std::vector<int64_t>{2, 4, 11, 12, 8, 3});
  CHECK(row_ids(t, 1) == std::vector<int64_t>{2, 8, 9, 10, 4, 3});
  CHECK(row_ids(t, 2) == std::vector<int64_t>{2, 4, 5, 6, 7, 3});
  CHECK(row_ids(t, 3) == std::vector<int64_t>{2, 7, 3});           // row 1: one window
  CHECK(row_ids(t, 4) == std::vector<int64_t>{2, 4, 5, 6, 7, 3});  // row 2: 5 tokens, [0,4) [3,5)
  CHECK(row_ids(t, 5) == std::vector<int64_t>{2, 7, 13, 3});
  CHECK(t.truncation_note() == "67 % of rows longer than 6 (2 of 3), 2 windows a row on average");
  const auto back = kg::data::deserialize_tokens(kg::data::serialize_tokens(t), "w.bin");
  CHECK(back.windows == t.windows);
  CHECK(back.ids == t.ids);
  CHECK(back.offsets == t.offsets);
  r.stride = 4;
  CHECK(kg::test::error_of<kg::ConfigError>([&] { kg::data::tokenize_rows(r); }).find("data.stride = 4") !=
        std::string::npos);
}

TEST_CASE("length-grouped order: the Hugging Face Trainer's LengthGroupedSampler on a shuffled order", "[unit][data]") {
  // Row r has length lengths[r]; the values below follow transformers' get_length_grouped_indices by hand.
  const std::vector<int64_t> lengths{3, 9, 1, 7, 5, 2, 8, 4, 6, 6};
  kg::data::TokenizedRows t;
  t.offsets.push_back(0);
  for (auto l : lengths) {
    t.ids.insert(t.ids.end(), static_cast<size_t>(l), 0);
    t.offsets.push_back(static_cast<int64_t>(t.ids.size()));
  }
  t.types.resize(t.ids.size());
  const std::vector<int64_t> order{4, 0, 9, 2, 7, 1, 5, 8, 3, 6};
  // batch 2: 10 / (2 * 4) = 1 batch per mega-batch: pairs sorted longest first, [4 0][9 2][1 7][8 5][6 3]; the third
  // holds the longest row (1, length 9), whose place swaps with the first's head.
  CHECK(kg::data::length_grouped_order(order, t, 2) == std::vector<int64_t>{1, 0, 9, 2, 4, 7, 8, 5, 6, 3});
  // batch 1: 10 / 4 = 2 batches per mega-batch: the same mega-batches of 2 rows.
  CHECK(kg::data::length_grouped_order(order, t, 1) == std::vector<int64_t>{1, 0, 9, 2, 4, 7, 8, 5, 6, 3});
  // batch 5: one batch per mega-batch, [9 4 7 0 2][1 6 3 8 5], then 1 and 9 swap.
  CHECK(kg::data::length_grouped_order(order, t, 5) == std::vector<int64_t>{1, 4, 7, 0, 2, 9, 6, 3, 8, 5});
  // batch 10: one mega-batch, sorted whole; rows 9 and 8 (both 6 long) keep the shuffled order's.
  CHECK(kg::data::length_grouped_order(order, t, 10) == std::vector<int64_t>{1, 6, 3, 9, 8, 4, 7, 0, 5, 2});
  CHECK(kg::data::length_grouped_order({}, t, 4).empty());
}

}  // namespace KG_UNITY_ID
}  // namespace
