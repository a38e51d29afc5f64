#include <stdlib.h>

#include <catch2/catch.hpp>
#include <filesystem>

#include "core/error.h"
#include "core/fs.h"
#include "data/csv.h"

namespace {
namespace KG_UNITY_ID {  // each test file's own names in a unity batch (CMakeLists.txt)

using kg::data::CsvTable;
using kg::data::parse_csv;
using Rows = std::vector<std::vector<std::string>>;

namespace {
std::string error_of(std::string_view text) {
  try {
    parse_csv(text, "train.csv");
  } catch (const kg::DataError& e) {
    return e.what();
  }
  return "(no error)";
}
}  // namespace

TEST_CASE("csv: plain LF file", "[unit]") {
  CsvTable t = parse_csv("id,label\n1,cat\n2,dog\n", "train.csv");
  CHECK(t.header == std::vector<std::string>{"id", "label"});
  CHECK(t.rows == Rows{{"1", "cat"}, {"2", "dog"}});
  CHECK(t.line == std::vector<int64_t>{2, 3});
  CHECK(t.column("label") == 1);
  CHECK(t.column("nope") == -1);
  CHECK(t.where(2) == "train.csv row 2 (line 3)");
}

TEST_CASE("csv: BOM, CRLF, no final newline, trailing blank lines", "[unit]") {
  CsvTable t = parse_csv("\xEF\xBB\xBFid,label\r\n1,a\r\n2,b", "x.csv");
  CHECK(t.header == std::vector<std::string>{"id", "label"});
  CHECK(t.rows == Rows{{"1", "a"}, {"2", "b"}});
  CsvTable u = parse_csv("id\n1\n2\n\n\r\n\n", "x.csv");
  CHECK(u.rows == Rows{{"1"}, {"2"}});
  CsvTable v = parse_csv("a,b\r\r\n1,2\r", "x.csv");  // lone CR ends a line too (old Mac files)
  CHECK(v.rows == Rows{{"1", "2"}});
  CHECK(v.line == std::vector<int64_t>{3});
}

TEST_CASE("csv: quoted fields with commas, quotes and line breaks", "[unit]") {
  CsvTable t = parse_csv(
      "id,text,n\n"
      "1,\"a, b\",3\n"
      "2,\"she said \"\"hi\"\"\",4\n"
      "3,\"two\nlines\r\nhere\",5\n"
      "4,\"\",\n"
      "5, keep spaces ,6\n",
      "q.csv");
  REQUIRE(t.rows.size() == 5);
  CHECK(t.rows[0] == std::vector<std::string>{"1", "a, b", "3"});
  CHECK(t.rows[1] == std::vector<std::string>{"2", "she said \"hi\"", "4"});
  CHECK(t.rows[2] == std::vector<std::string>{"3", "two\nlines\r\nhere", "5"});
  CHECK(t.rows[3] == std::vector<std::string>{"4", "", ""});
  CHECK(t.rows[4] == std::vector<std::string>{"5", " keep spaces ", "6"});
  // Physical lines account for the line breaks inside quotes.
  CHECK(t.line == std::vector<int64_t>{2, 3, 4, 7, 8});
  CHECK(t.where(5) == "q.csv row 5 (line 8)");
}

TEST_CASE("csv: header names are trimmed, blank lines in the middle skipped", "[unit]") {
  CsvTable t = parse_csv(" id ,\tlabel\n\n1,2\n", "x.csv");
  CHECK(t.header == std::vector<std::string>{"id", "label"});
  CHECK(t.rows == Rows{{"1", "2"}});
  CHECK(t.line == std::vector<int64_t>{3});
  CHECK(parse_csv("id,label\n", "x.csv").rows.empty());
}

TEST_CASE("csv: error messages carry file, row and line", "[unit]") {
  CHECK(error_of("id,label\n1,a\n2,b\n3,c\n4,d\n5,e,f\n") == "train.csv row 5 (line 6) has 3 fields, the header has 2");
  CHECK(error_of("id,label\n1\n") == "train.csv row 1 (line 2) has 1 field, the header has 2");
  CHECK_THAT(error_of("id,label\n1,a\n2,\"never\nclosed\n"),
             Catch::StartsWith("train.csv line 3: quoted field 2 is never closed"));
  CHECK_THAT(error_of("id,label\n1,ab\"c\n"), Catch::StartsWith("train.csv line 2: stray quote"));
  CHECK_THAT(error_of("id,label\n1,\"ab\"c\n"),
             Catch::StartsWith("train.csv line 2: unexpected text after the closing quote"));
  CHECK(error_of("") == "train.csv is empty (expected a header line)");
  CHECK(error_of("\xEF\xBB\xBF\n\r\n") == "train.csv is empty (expected a header line)");
  CHECK(error_of("id,label,id\n") == "train.csv line 1: duplicate column \"id\" in the header (columns 1 and 3)");
  CHECK_THROWS_AS(parse_csv("a\"\n", "x"), kg::DataError);
}

TEST_CASE("csv: bytes that are not UTF-8 text are refused with their line", "[unit]") {
  // A Latin-1 label used to reach the class list's JSON and end fit with an internal error.
  CHECK(error_of("id,label\n0,dog\n1,caf\xE9\n") ==
        "train.csv line 3, byte 6: 0xE9 is not valid UTF-8; kgtrain reads CSV files as UTF-8 (convert one in "
        "another encoding, e.g. iconv -f latin1 -t utf-8 IN > OUT)");
  CHECK_THAT(error_of("\xFF\xFEi\0d\0"), Catch::StartsWith("train.csv line 1, byte 1: 0xFF is not valid UTF-8"));
  CHECK_THAT(error_of("id,label\r\n1,a\r\n2,\"b\nc\xC3\"\r\n"),
             Catch::StartsWith("train.csv line 4, byte 2: 0xC3 is not valid UTF-8"));
  CHECK(error_of(std::string_view("id,label\n5\0,1\n", 14)) ==
        "train.csv line 2, byte 2: a NUL byte (0x00); a CSV must be UTF-8 text (is this file binary, or UTF-16?)");
  CHECK(parse_csv("id,label\n1,\xE7\x8C\xAB\n", "x").rows == Rows{{"1", "\xE7\x8C\xAB"}});
}

TEST_CASE("csv: require_column suggests close names", "[unit]") {
  CsvTable t = parse_csv("id,label\n1,2\n", "train.csv");
  CHECK(t.require_column("label", "data.label_column") == 1);
  CHECK_THROWS_WITH(t.require_column("lbl", "data.label_column"),
                    "train.csv: no column \"lbl\" (columns: id, label); did you mean \"label\"? "
                    "(set by data.label_column)");
  CHECK_THROWS_WITH(t.require_column("Label", ""),
                    "train.csv: no column \"Label\" (columns: id, label); did you mean \"label\"?");
  CHECK_THROWS_WITH(t.require_column("target", ""), "train.csv: no column \"target\" (columns: id, label)");
  CHECK_THROWS_AS(t.require_column("x", ""), kg::DataError);
}

TEST_CASE("csv: writer quotes only when needed and round-trips", "[unit]") {
  using kg::data::csv_field;
  CHECK(csv_field("plain") == "plain");
  CHECK(csv_field("") == "");
  CHECK(csv_field("a,b") == "\"a,b\"");
  CHECK(csv_field("say \"x\"") == "\"say \"\"x\"\"\"");
  CHECK(csv_field("a\nb") == "\"a\nb\"");
  CHECK(csv_field("a\rb") == "\"a\rb\"");
  CHECK(csv_field(" lead") == "\" lead\"");
  CHECK(csv_field("trail ") == "\"trail \"");

  const Rows rows = {{"1", "a,b", "\"q\"", ""}, {"2", " x ", "multi\nline\r\nfield", "ünïcode"}, {"3", "", "", ""}};
  std::string text = kg::data::csv_line({"id", "a", "b", "c"});
  for (const auto& r : rows) text += kg::data::csv_line(r);
  CsvTable t = parse_csv(text, "rt.csv");
  CHECK(t.rows == rows);
  // A single empty field must not turn into a blank (skipped) line.
  CsvTable one = parse_csv(kg::data::csv_line({"v"}) + kg::data::csv_line({""}), "one.csv");
  CHECK(one.rows == Rows{{""}});
}

TEST_CASE("csv: read_csv reads files and reports missing ones", "[unit]") {
  std::string dir = (std::filesystem::temp_directory_path() / "kg_csv_XXXXXX").string();
  REQUIRE(mkdtemp(dir.data()) != nullptr);
  kg::write_file_atomic(dir + "/t.csv", "id,label\r\n7,x\r\n");
  CsvTable t = kg::data::read_csv(dir + "/t.csv");
  CHECK(t.path == dir + "/t.csv");
  CHECK(t.rows == Rows{{"7", "x"}});
  CHECK_THROWS_WITH(kg::data::read_csv(dir + "/none.csv"), Catch::Contains("none.csv"));
  {
    std::error_code ec;
    kg::remove_tree(dir, ec);
  }
}

TEST_CASE("csv: a field over 16 MiB and a record over 100,000 columns are refused with their line", "[unit]") {
  std::string big = "id,text\n1,ok\n2," + std::string((size_t{16} << 20) + 1, 'x') + "\n";
  CHECK_THAT(error_of(big), Catch::Contains("train.csv line 3: field 2 holds 16777217 bytes, more than a field may"));
  big = "id,text\n1,\"" + std::string((size_t{16} << 20) + 1, 'y') + "\"\n";
  CHECK_THAT(error_of(big), Catch::Contains("train.csv line 2: field 2 holds"));
  std::string wide = "id";
  for (int c = 0; c < 100000; ++c) wide += ",c" + std::to_string(c);
  CHECK_THAT(error_of(wide + "\n"), Catch::Contains("train.csv line 1: a record with more than 100,000 fields"));
  // Exactly at the limits: read.
  std::string at_limit = "id";
  for (int c = 1; c < 100000; ++c) at_limit += ",c" + std::to_string(c);
  CHECK(parse_csv(at_limit + "\n", "t.csv").header.size() == 100000);
  CHECK(parse_csv("a\n" + std::string(size_t{16} << 20, 'z') + "\n", "t.csv").rows[0][0].size() == (size_t{16} << 20));
}

}  // namespace KG_UNITY_ID
}  // namespace
