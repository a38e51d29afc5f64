// Tables in other formats than CSV, read into the same CsvTable, so every source, fold, extra-rows file and
// sample submission reads them unchanged: Parquet files (lib/data/parquet.cpp) and Arrow IPC streams, the
// .arrow files of a Hugging Face `datasets` save_to_disk folder (lib/data/arrow_ipc.cpp). Cells are text as a
// CSV would hold it: integers in decimal, floats in their shortest round-trip form, booleans True/False,
// dates YYYY-MM-DD, nulls (and NaN) empty. A column kgtrain cannot turn into text (lists, maps, other structs,
// timestamps, binary data that is not UTF-8, the image bytes of the HF Image feature) is listed in
// CsvTable::unusable: reading the table succeeds, naming such a column in the recipe is a DataError.
// Rows have no line: where() says "train.parquet row 17". Every problem is a DataError naming the file.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "data/csv.h"

namespace kg::data {

// Cells from values, as a CSV would hold them ("" for NaN: pandas' missing value).
namespace table_text {
std::string float_text(float f);                     // shortest round-trip form, "1.0" for whole numbers
std::string double_text(double d);                   // the same for doubles
std::string half_to_text(uint16_t h);                // an IEEE half
std::string date_text(int64_t days);                 // days since 1970-01-01 -> YYYY-MM-DD
std::string decimal_text(int64_t v, int64_t scale);  // unscaled value and scale -> "-12.34"
std::string in_table_images();                       // what an Image column holds when its images are inside the table
}  // namespace table_text

// Hostile-size guards: a few bytes of Parquet can state billions of null rows or a page of gigabytes.
struct TableLimits {
  size_t max_cells = size_t{1} << 26;        // rows x columns (each costs a std::string, 32 bytes: 2 GiB)
  size_t max_block_bytes = size_t{1} << 30;  // one decompressed page or buffer
};

// A Parquet file's bytes. `name` is used in messages and stored as the table's path.
CsvTable parse_parquet(std::string_view bytes, const std::string& name, const TableLimits& limits = {});

// An Arrow IPC stream (or file: "ARROW1" magic) appended to `into`: its schema sets `into`'s header when that
// is empty and must equal it otherwise (a dataset's shards). `into.path` names the table in messages.
void parse_arrow_ipc(std::string_view bytes, const std::string& shard, CsvTable& into, const TableLimits& limits = {});

// The user's table at `path`, by what it is: a .parquet file, a .arrow file, a save_to_disk folder
// (dataset_info.json + state.json: its _data_files in order) or a dataset's split folder, and otherwise CSV.
CsvTable read_table(const std::string& path);

// Whether `path` is a `datasets` save_to_disk folder (a folder with state.json).
bool is_dataset_folder(const std::string& path);
// Whether there is a table at `path` for read_table: a file, or a save_to_disk folder.
bool table_exists(const std::string& path);

}  // namespace kg::data
