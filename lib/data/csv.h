// RFC 4180 CSV reading and writing. Kaggle CSVs have a header and any number of columns, known only
// at run time. Every problem is a DataError naming the file and the physical line.
#pragma once
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace kg::data {

struct CsvTable {
  std::string path;                            // for messages
  std::vector<std::string> header;             // names trimmed of surrounding whitespace
  std::vector<std::vector<std::string>> rows;  // data rows (header excluded), all header.size() wide
  std::vector<int64_t> line;                   // 1-based physical line where each data row starts (CSV only)
  // Parquet / Arrow tables (data/table_read.h): columns kgtrain cannot read as text, by index, with what they
  // hold ("list<int64>", "image bytes (the Hugging Face Image feature)"); their cells are empty.
  // require_column refuses them.
  std::map<int, std::string> unusable;

  // Index of the column, -1 when absent.
  int column(const std::string& name) const;
  // Index of the column; DataError naming the columns there are, with a did-you-mean when one is
  // close. `key_for_message` is the recipe key that asked for the column ("" for none). DataError too for
  // a column listed in `unusable`.
  int require_column(const std::string& name, const std::string& key_for_message) const;
  // "train.csv row 17 (line 18)" ("train.parquet row 17" without lines); `row` is the 1-based data row number.
  std::string where(size_t row) const;
};

// Reads and parses a file; DataError on any problem.
CsvTable read_csv(const std::string& path);

// Parses CSV text. `name` is used in messages and stored as the table's path.
// Accepts a UTF-8 BOM, CRLF, LF or lone-CR line ends, a last line without a line end, quoted
// fields with commas, doubled quotes and line breaks. Blank lines are skipped (as pandas does).
// Fields keep their whitespace; header names are trimmed.
CsvTable parse_csv(std::string_view text, const std::string& name);

// Cells, surrounding whitespace ignored; nullopt when the cell is not one.
std::optional<int64_t> cell_int(const std::string& cell);  // a whole integer
std::optional<float> cell_float(const std::string& cell);  // a finite float (finite as a float too)
std::optional<float> cell_flag(const std::string& cell);   // an indicator: 0/1 (also 0.0/1.0, true/false)
// The non-empty names between separators `sep` ("" = the whole cell).
std::vector<std::string> cell_names(const std::string& cell, const std::string& sep);
// csv.require_column of each name, in order.
std::vector<int> require_columns(const CsvTable& csv, const std::vector<std::string>& names, const char* key);

// One field, quoted when needed (comma, quote, CR/LF, leading/trailing space).
std::string csv_field(std::string_view s);

// One record: fields joined by commas, ended by "\n".
std::string csv_line(const std::vector<std::string>& fields);

}  // namespace kg::data
