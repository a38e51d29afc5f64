// Parquet reading (lib/data/parquet.cpp) and read_table: the fixtures pyarrow, pandas and datasets wrote
// (tests/data/fixtures/tables, scripts/gen_table_fixtures.py) cell for cell against their expected.json, the
// Snappy decoder, and hostile files built here (truncated footer, bad magic, huge lengths, deep Thrift, invalid
// UTF-8), each a DataError that says what is wrong.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/fs.h"
#include "data/table_codecs.h"
#include "data/table_read.h"
#include "support/parquet_writer.h"
#include "support/temp_dir.h"
#include "test_paths.h"

namespace {
namespace KG_UNITY_ID {  // each test file's own names in a unity batch (CMakeLists.txt)

using kg::data::CsvTable;
using nlohmann::json;
namespace fs = std::filesystem;

const std::string kTables = KGTRAIN_SOURCE_DIR "/tests/data/fixtures/tables/";

std::string error_of_parquet(const std::string& bytes, const kg::data::TableLimits& limits = {}) {
  try {
    kg::data::parse_parquet(bytes, "train.parquet", limits);
  } catch (const kg::DataError& e) {
    return e.what();
  }
  return "(no error)";
}

// The table at `name` against expected.json's entry: header, unusable columns, every cell (floats by value).
void check_fixture(const std::string& name) {
  static const json all = json::parse(kg::read_file(kTables + "expected.json"));
  INFO(name);
  REQUIRE(all.contains(name));
  const json& e = all[name];
  const CsvTable t = kg::data::read_table(kTables + name);
  CHECK(t.header == e["header"].get<std::vector<std::string>>());
  std::vector<std::string> unusable;
  for (const auto& [c, why] : t.unusable) unusable.push_back(t.header[static_cast<size_t>(c)]);
  std::sort(unusable.begin(), unusable.end());
  CHECK(unusable == e["unusable"].get<std::vector<std::string>>());
  REQUIRE(t.rows.size() == e["rows"].size());
  for (size_t r = 0; r < t.rows.size(); ++r) {
    for (size_t c = 0; c < t.header.size(); ++c) {
      const json& want = e["rows"][r][c];
      const std::string& got = t.rows[r][c];
      INFO(t.where(r + 1) << " column " << t.header[c] << ": " << got << " vs " << want.dump());
      if (want.is_null()) {
        CHECK(got.empty());
      } else if (want.is_number()) {  // the shortest round-trip text of the value pyarrow holds
        REQUIRE(!got.empty());
        const double v = std::strtod(got.c_str(), nullptr);
        if (t.header[c] == "f32")
          CHECK(static_cast<float>(v) == static_cast<float>(want.get<double>()));
        else
          CHECK(v == want.get<double>());
      } else {
        CHECK(got == want.get<std::string>());
      }
    }
  }
}

TEST_CASE("parquet: every codec, dictionary and plain, data pages v1 and v2, row groups and pages", "[unit][data]") {
  for (const char* f : {"snappy_dict_v1.parquet", "gzip_plain_v2.parquet", "zstd_dict_v2_groups.parquet",
                        "none_plain_v1_pages.parquet", "snappy_int_decimal.parquet", "pandas.parquet"}) {
    if (std::string(f).find("zstd") != std::string::npos && !kg::data::have_zstd()) continue;
    check_fixture(f);
  }
}

TEST_CASE("parquet: the Hugging Face Image struct gives its paths; images inside the table are unusable",
          "[unit][data]") {
  check_fixture("image_paths.parquet");
  check_fixture("image_bytes.parquet");
  const CsvTable t = kg::data::read_table(kTables + "image_bytes.parquet");
  CHECK(t.require_column("id", "data.id_col") == 0);
  try {
    t.require_column("image", "data.path_col");
    FAIL("no error");
  } catch (const kg::DataError& e) {
    const std::string m = e.what();
    CHECK(m.find("column \"image\" holds image bytes inside the table") != std::string::npos);
    CHECK(m.find("save them as files") != std::string::npos);
    CHECK(m.find("data.path_col") != std::string::npos);
  }
}

TEST_CASE("parquet: unusable columns name their type when a recipe asks for them", "[unit][data]") {
  const CsvTable t = kg::data::read_table(kTables + "snappy_dict_v1.parquet");
  auto message = [&](const std::string& col) {
    try {
      t.require_column(col, "data.label_cols");
    } catch (const kg::DataError& e) {
      return std::string(e.what());
    }
    return std::string("(no error)");
  };
  CHECK(message("tags").find("holds nested data, list<INT64>, which kgtrain cannot read") != std::string::npos);
  CHECK(message("when").find("timestamp") != std::string::npos);
  CHECK(message("blob").find("binary data") != std::string::npos);
  CHECK(message("dec").find("decimal(9,2)") != std::string::npos);
  CHECK(t.where(17) == kTables + "snappy_dict_v1.parquet row 17");
}

TEST_CASE("parquet: a table the test writer makes reads back; its where() has no line", "[unit][data]") {
  const std::string bytes = kg::test::parquet::write_strings({"id", " label "}, {{"a", "x"}, {"b", ""}});
  const CsvTable t = kg::data::parse_parquet(bytes, "t.parquet");
  CHECK(t.header == std::vector<std::string>{"id", "label"});
  CHECK(t.rows == std::vector<std::vector<std::string>>{{"a", "x"}, {"b", ""}});
  CHECK(t.where(2) == "t.parquet row 2");
  CHECK(t.line.empty());
}

TEST_CASE("parquet: hostile files are DataErrors that say what is wrong", "[unit][data]") {
  const std::string good = kg::test::parquet::write_strings({"id", "label"}, {{"a", "x"}, {"b", "y"}});
  CHECK(error_of_parquet("PAR1").find("not a Parquet file") != std::string::npos);
  CHECK(error_of_parquet("x" + good.substr(1)).find("no PAR1 magic") != std::string::npos);
  CHECK(error_of_parquet(good.substr(0, good.size() - 1)).find("no PAR1 magic") != std::string::npos);
  // A footer length past the file.
  std::string huge_footer = good;
  huge_footer.replace(huge_footer.size() - 8, 4, kg::test::parquet::le32(0x7fffffff));
  CHECK(error_of_parquet(huge_footer).find("more than the file holds") != std::string::npos);
  // The footer cut short (its length says more than what is left of it).
  std::string cut = good.substr(0, good.size() - 8 - 10);
  const uint32_t footer_len =
      static_cast<uint32_t>(good[good.size() - 8] & 0xff) | (static_cast<uint32_t>(good[good.size() - 7] & 0xff) << 8);
  cut += kg::test::parquet::le32(footer_len) + "PAR1";
  const std::string cut_error = error_of_parquet(cut);
  CHECK(cut_error.find("train.parquet") == 0);
  // A string's length prefix of 2 GB.
  std::string huge_len = good;
  const size_t at = huge_len.find(kg::test::parquet::le32(1) + "a");
  REQUIRE(at != std::string::npos);
  huge_len.replace(at, 4, kg::test::parquet::le32(0x7fffffff));
  CHECK(error_of_parquet(huge_len).find("column \"id\": a page whose values end early") != std::string::npos);
  // Thrift structs nested 200 deep.
  std::string deep(200, '\x1c');  // field 1 (delta 1), a struct
  deep += std::string(200, '\0');
  CHECK(error_of_parquet("PAR1" + deep + kg::test::parquet::le32(static_cast<uint32_t>(deep.size())) + "PAR1")
            .find("nested more than 32 deep") != std::string::npos);
  // A list that states more elements than bytes remain.
  std::string many = "\x19\xf9\xff\xff\xff\x0f";  // field 1: a list of 2^32-1 lists
  CHECK(error_of_parquet("PAR1" + many + kg::test::parquet::le32(static_cast<uint32_t>(many.size())) + "PAR1")
            .find("elements past the end") != std::string::npos);
  // More cells than the limits allow.
  kg::data::TableLimits small;
  small.max_cells = 3;
  CHECK(error_of_parquet(good, small).find("more than 3 cells") != std::string::npos);
}

TEST_CASE("parquet: invalid UTF-8 in a string column names the column and the row", "[unit][data]") {
  const std::string bad = kg::test::parquet::write_strings({"id", "label"}, {{"a", "x"}, {"b", "\xff\xfe"}});
  const std::string m = error_of_parquet(bad);
  CHECK(m.find("train.parquet row 2, column \"label\": 0xFF at byte 1 is not valid UTF-8") != std::string::npos);
  const std::string nul = kg::test::parquet::write_strings({"id"}, {{std::string("a\0b", 3)}});
  CHECK(error_of_parquet(nul).find("row 1, column \"id\": 0x00 at byte 2 is a NUL byte") != std::string::npos);
}

TEST_CASE("parquet: every byte of a fixture flipped is read or refused, never a crash", "[unit][data]") {
  // A little fuzzing in the ordinary suite (the libFuzzer harness does much more, tests/fuzz): each byte of a small
  // dictionary-encoded Snappy file, flipped, either reads or gives a DataError.
  const std::string good = kg::read_file(kTables + "image_paths.parquet");
  kg::data::TableLimits limits;
  limits.max_cells = 1 << 16;
  limits.max_block_bytes = 1 << 20;
  int refused = 0;
  for (size_t i = 0; i < good.size(); ++i) {
    std::string b = good;
    b[i] = static_cast<char>(b[i] ^ 0x5a);
    try {
      kg::data::parse_parquet(b, "f.parquet", limits);
    } catch (const kg::DataError&) {
      ++refused;
    }
  }
  CHECK(refused > 0);
}

TEST_CASE("snappy: literals, overlapping copies, and damaged data", "[unit][data]") {
  using kg::data::snappy_decompress;
  CHECK(snappy_decompress(std::string("\x05\x10hello", 7), 5, 100, "t") == "hello");
  // "abc", then a copy of 6 bytes from 3 back (overlapping): abcabcabc.
  CHECK(snappy_decompress(std::string("\x09\x08"
                                      "abc\x09\x03",
                                      7),
                          9, 100, "t") == "abcabcabc");
  auto err = [](const std::string& in, size_t n) {
    try {
      kg::data::snappy_decompress(in, n, 100, "page");
    } catch (const kg::DataError& e) {
      return std::string(e.what());
    }
    return std::string("(no error)");
  };
  CHECK(err(std::string("\x05\x10hel", 5), 5).find("truncated literal") != std::string::npos);
  CHECK(err(std::string("\x04\x09\x05", 3), 4).find("copy from before the start") != std::string::npos);
  CHECK(err(std::string("\x05\x10hello", 7), 6).find("disagrees") != std::string::npos);
  CHECK(err(std::string("\x03\x10hello", 7), 3).find("longer than stated") != std::string::npos);
  CHECK(err("x", 1000).find("more than kgtrain accepts") != std::string::npos);
}

TEST_CASE("read_table: CSV, Parquet, Arrow and save_to_disk folders; a DatasetDict names its splits", "[unit][data]") {
  kg::test::TempDir dir;
  const std::string csv = dir.write("t.csv", "id,label\na,x\n");
  CHECK(kg::data::read_table(csv).line == std::vector<int64_t>{2});
  CHECK(kg::data::table_exists(kTables + "hf_dataset"));
  CHECK(kg::data::is_dataset_folder(kTables + "hf_dataset"));
  CHECK_FALSE(kg::data::table_exists(dir / "missing.parquet"));
  // A DatasetDict: splits in folders of their own.
  fs::create_directories(dir / "dd");
  fs::copy(kTables + "hf_dataset", dir / "dd/train", fs::copy_options::recursive);
  try {
    kg::data::read_table(dir / "dd");
    FAIL("no error");
  } catch (const kg::DataError& e) {
    CHECK(std::string(e.what()).find("a DatasetDict folder; name one of its splits (train)") != std::string::npos);
  }
  // state.json naming a shard that is not there, a path outside the folder, or deep JSON.
  dir.write("dd/train/state.json", R"({"_data_files": [{"filename": "data-00009-of-00010.arrow"}]})");
  CHECK_THROWS_WITH(kg::data::read_table(dir / "dd/train"), Catch::Contains("which is not in the folder"));
  dir.write("dd/train/state.json", R"({"_data_files": [{"filename": "../../x.arrow"}]})");
  CHECK_THROWS_WITH(kg::data::read_table(dir / "dd/train"), Catch::Contains("not a file name inside the folder"));
  dir.write("dd/train/state.json", std::string(100000, '[') + std::string(100000, ']'));
  CHECK_THROWS_AS(kg::data::read_table(dir / "dd/train"), kg::DataError);
}

}  // namespace KG_UNITY_ID
}  // namespace
