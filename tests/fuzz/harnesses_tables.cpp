// The fuzz harnesses of the Parquet and Arrow IPC readers (tests/fuzz/harnesses.h): the bytes of a .parquet file,
// or of an .arrow shard of a save_to_disk folder, through data::parse_parquet / parse_arrow_ipc at limits that keep
// each input small and fast, then what a source does with the table: every column asked for by a recipe key
// (require_column, which refuses unusable ones) and every row's where(). A DataError is a clean refusal. Torch-free:
// the two harnesses also build alone with the readers' files (scripts/fuzz_tables.sh, no sanitized LibTorch build).
#include "core/error.h"
#include "data/table_read.h"
#include "fuzz/harnesses.h"

namespace kg::fuzz {
namespace {

template <class F>
int table_refusals_ok(F&& f) {
  try {
    f();
  } catch (const kg::Error& e) {
    if (e.exit_code() != kExitConfig && e.exit_code() != kExitData) throw;
  }
  return 0;
}

data::TableLimits fuzz_table_limits() {
  data::TableLimits l;
  l.max_cells = size_t{1} << 18;
  l.max_block_bytes = size_t{16} << 20;
  return l;
}

void use_table(const data::CsvTable& t) {
  for (size_t c = 0; c < t.header.size(); ++c) {
    try {
      (void)t.require_column(t.header[c], "data.label_cols");
    } catch (const DataError&) {
    }
  }
  for (size_t r = 0; r < t.rows.size(); ++r) {
    if (t.rows[r].size() != t.header.size()) throw InternalError("a row of another width than the header");
    if (r < 4) (void)t.where(r + 1);
  }
}

}  // namespace

int parquet(const uint8_t* data, size_t size) {
  return table_refusals_ok([&] {
    const auto t = data::parse_parquet(std::string_view(reinterpret_cast<const char*>(data), size), "train.parquet",
                                       fuzz_table_limits());
    use_table(t);
  });
}

int arrow(const uint8_t* data, size_t size) {
  return table_refusals_ok([&] {
    data::CsvTable t;
    t.path = "train";
    data::parse_arrow_ipc(std::string_view(reinterpret_cast<const char*>(data), size), "data-00000-of-00001.arrow", t,
                          fuzz_table_limits());
    use_table(t);
  });
}

}  // namespace kg::fuzz
