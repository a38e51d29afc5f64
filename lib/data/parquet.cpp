// Parquet reading (data/table_read.h): the footer's FileMetaData (data/parquet_meta.cpp), the schema's
// top-level columns, and each row group's column chunks (data/parquet_pages.cpp) into a CsvTable. Top-level
// columns only: primitive ones, and the Hugging Face Image feature's struct<bytes: binary, path: string>; any
// other nesting is unusable (CsvTable::unusable). Names at namespace scope live in kg::data::pq (unity builds).
#include <algorithm>
#include <cstdio>
#include <cstring>

#include "core/strings.h"
#include "data/parquet_format.h"

namespace kg::data {
namespace pq {

// A top-level column: a primitive leaf, or the Image struct (bytes, path leaves).
struct Column {
  std::string name;
  int leaf = -1;                        // primitive: its leaf
  int bytes_leaf = -1, path_leaf = -1;  // the Image struct
  std::string unusable;                 // what it holds, when kgtrain cannot read it
};

// The schema (a depth-first list; the root's children are the columns) as columns over leaves, leaf i being
// column chunk i of each row group.
struct Schema {
  const FileMeta& meta;
  const std::string& name;
  std::vector<Leaf> leaves;
  std::vector<Column> cols;

  // The type of the subtree at i (i moves past it); its leaves are appended.
  std::string describe(size_t& i, int depth) {
    KG_CHECK(i < meta.schema.size() && depth < 32, DataError, name, ": a damaged schema");
    const SchemaElem& e = meta.schema[i++];
    std::string s;
    if (e.num_children <= 0) {
      Leaf l;
      l.elem = e;
      classify(l);
      s = l.type_text;
      l.top = static_cast<int>(cols.size());
      leaves.push_back(l);
    } else {
      KG_CHECK(e.num_children <= static_cast<int64_t>(meta.schema.size() - i), DataError, name,
               ": a damaged schema (a group with more children than elements)");
      const std::string lt = logical_text(e);
      const SchemaElem& mid = meta.schema[i];
      if (lt == "list" && e.num_children == 1 && mid.repetition == 2 && mid.num_children == 1) {
        ++i;  // the three-level list: list<element type>, its repeated middle group left out
        s = "list<" + describe(i, depth + 1) + ">";
        if (e.repetition == 2) s = "repeated " + s;
        return s;
      }
      s = (lt == "list" || lt == "map") ? lt + "<" : "struct<";
      for (int64_t c = 0; c < e.num_children; ++c) {
        const std::string child = meta.schema.size() > i ? meta.schema[i].name : "";
        s += (c ? ", " : "") + child + ": " + describe(i, depth + 1);
      }
      s += ">";
    }
    if (e.repetition == 2) s = "repeated " + s;
    return s;
  }

  void column_at(size_t& at) {
    KG_CHECK(at < meta.schema.size(), DataError, name, ": a damaged schema");
    const SchemaElem& e = meta.schema[at];
    Column col;
    col.name = kg::trim(e.name);
    const size_t first_leaf = leaves.size();
    size_t j = at;
    const std::string type = describe(j, 0);
    const auto& sc = meta.schema;
    const bool image = e.num_children == 2 && e.repetition != 2 && leaves.size() == first_leaf + 2 &&
                       sc[at + 1].name == "bytes" && sc[at + 2].name == "path" && sc[at + 1].type == kByteArray &&
                       sc[at + 2].type == kByteArray && sc[at + 1].repetition != 2 && sc[at + 2].repetition != 2;
    if (e.num_children <= 0 && e.repetition != 2 && leaves.back().kind != Kind::unusable) {
      col.leaf = static_cast<int>(first_leaf);
    } else if (image) {
      col.bytes_leaf = static_cast<int>(first_leaf);
      col.path_leaf = static_cast<int>(first_leaf + 1);
      leaves[first_leaf + 1].kind = Kind::text;
      leaves[first_leaf].kind = Kind::binary;
    } else {
      col.unusable = (e.num_children > 0 ? "nested data, " : "") + type;
    }
    // Levels: each optional level adds one to the maximum definition level.
    for (size_t l = first_leaf; l < leaves.size(); ++l)
      leaves[l].max_def = (e.repetition == 1) + (e.num_children > 0 && leaves[l].elem.repetition == 1);
    at = j;
    cols.push_back(std::move(col));
  }

  void read(CsvTable& table) {
    KG_CHECK(!meta.schema.empty(), DataError, name, ": a footer without a schema");
    const int64_t ncols = meta.schema[0].num_children;
    KG_CHECK(ncols >= 0 && ncols <= static_cast<int64_t>(meta.schema.size()) - 1, DataError, name,
             ": a damaged schema (the root has ", ncols, " columns)");
    size_t at = 1;
    for (int64_t c = 0; c < ncols; ++c) column_at(at);
    for (size_t c = 0; c < cols.size(); ++c) {
      for (size_t d = 0; d < c; ++d)
        KG_CHECK(cols[d].name != cols[c].name, DataError, name, ": duplicate column \"", cols[c].name, "\"");
      table.header.push_back(cols[c].name);
      if (!cols[c].unusable.empty()) table.unusable[static_cast<int>(c)] = cols[c].unusable;
    }
  }
};

// Moves a primitive column's values into rows [base, base + rows) of column c.
void fill_column(CsvTable& table, Column& col, const Leaf& leaf, size_t c, size_t base, Decoded& d) {
  const bool text = leaf.kind == Kind::text, binary = leaf.kind == Kind::binary;
  size_t v = 0;
  for (size_t r = 0; r < d.present.size(); ++r) {
    if (!d.present[r]) continue;
    std::string& cell = table.rows[base + r][c];
    cell = std::move(d.values[v++]);
    if (!text && !binary) continue;
    const size_t bad = std::min(invalid_utf8_at(cell), cell.find('\0'));
    if (bad == std::string::npos) continue;
    if (binary) {  // binary data that is not text: the column is unusable, the table is not
      table.unusable[static_cast<int>(c)] = "binary data (" + leaf.type_text + ")";
      col.unusable = "binary";
      for (auto& row : table.rows) row[c].clear();
      return;
    }
    char hex[8];
    std::snprintf(hex, sizeof hex, "0x%02X", static_cast<unsigned char>(cell[bad]));
    throw DataError(table.where(base + r + 1) + ", column \"" + col.name + "\": " + hex + " at byte " +
                    std::to_string(bad + 1) + (cell[bad] ? " is not valid UTF-8" : " is a NUL byte") +
                    " (a string column must hold UTF-8 text)");
  }
}

// The Image struct: its path, unless the bytes are in the table (then the column is unusable).
void fill_image(CsvTable& table, Column& col, size_t c, size_t base, const Decoded& bytes, Decoded& path) {
  size_t v = 0;
  bool have_bytes = false;
  for (size_t r = 0; r < path.present.size(); ++r) {
    have_bytes = have_bytes || bytes.present[r];
    if (path.present[r]) table.rows[base + r][c] = std::move(path.values[v++]);
    KG_CHECK(invalid_utf8_at(table.rows[base + r][c]) == std::string_view::npos, DataError, table.where(base + r + 1),
             ", column \"", col.name, "\": an image path that is not valid UTF-8");
  }
  if (!have_bytes) return;
  table.unusable[static_cast<int>(c)] = table_text::in_table_images();
  col.unusable = "image bytes";
  for (auto& row : table.rows) row[c].clear();
}

void read_row_group(std::string_view bytes, Schema& s, size_t g, const TableLimits& limits, CsvTable& table) {
  const std::string& name = s.name;
  const RowGroupMeta& rg = s.meta.row_groups[g];
  KG_CHECK(rg.chunks.size() == s.leaves.size(), DataError, name, ": row group ", g + 1, " has ", rg.chunks.size(),
           " column chunks, the schema ", s.leaves.size(), " columns");
  KG_CHECK(rg.num_rows >= 0, DataError, name, ": row group ", g + 1, " has a negative row count");
  const size_t rows = static_cast<size_t>(rg.num_rows);
  const size_t width = std::max<size_t>(1, s.cols.size());  // a row costs a vector even without columns
  KG_CHECK(rows <= limits.max_cells / width && table.rows.size() <= limits.max_cells / width - rows, DataError, name,
           ": more than ", limits.max_cells, " cells (rows x columns; a damaged or hostile file?)");
  const size_t base = table.rows.size();
  table.rows.resize(base + rows, std::vector<std::string>(s.cols.size()));
  for (size_t c = 0; c < s.cols.size(); ++c) {
    Column& col = s.cols[c];
    if (!col.unusable.empty()) continue;
    auto read_leaf = [&](int li, bool discard) {
      const Leaf& leaf = s.leaves[static_cast<size_t>(li)];
      const ChunkMeta& cm = rg.chunks[static_cast<size_t>(li)];
      KG_CHECK(cm.type == leaf.elem.type, DataError, name, ": column \"", col.name,
               "\": its chunk's type disagrees with the schema");
      return read_column_chunk(bytes, leaf, cm, rg.num_rows, discard, name, col.name, limits);
    };
    if (col.leaf >= 0) {
      Decoded d = read_leaf(col.leaf, false);
      fill_column(table, col, s.leaves[static_cast<size_t>(col.leaf)], c, base, d);
    } else {
      const Decoded b = read_leaf(col.bytes_leaf, true);
      Decoded p = read_leaf(col.path_leaf, false);
      fill_image(table, col, c, base, b, p);
    }
  }
}

CsvTable parse(std::string_view bytes, const std::string& name, const TableLimits& limits) {
  CsvTable table;
  table.path = name;
  KG_CHECK(bytes.size() >= 12, DataError, name, ": not a Parquet file (", bytes.size(),
           " bytes, shorter than its magic numbers and footer)");
  KG_CHECK(bytes.substr(bytes.size() - 4) != "PARE", DataError, name,
           ": an encrypted Parquet file, which kgtrain does not read");
  KG_CHECK(bytes.substr(0, 4) == "PAR1" && bytes.substr(bytes.size() - 4) == "PAR1", DataError, name,
           ": not a Parquet file (no PAR1 magic at its start and end: truncated, or another format?)");
  uint32_t footer_len = 0;
  std::memcpy(&footer_len, bytes.data() + bytes.size() - 8, 4);
  KG_CHECK(footer_len <= bytes.size() - 12, DataError, name, ": its footer states ", footer_len,
           " bytes, more than the file holds (truncated file?)");
  const auto* fb = reinterpret_cast<const uint8_t*>(bytes.data() + bytes.size() - 8 - footer_len);
  const std::string fwhat = name + " footer";
  Thrift t{fb, fb + footer_len, fwhat};
  const FileMeta meta = read_file_meta(t);
  Schema schema{meta, name, {}, {}};
  schema.read(table);
  for (size_t g = 0; g < meta.row_groups.size(); ++g) read_row_group(bytes, schema, g, limits, table);
  return table;
}

}  // namespace pq

CsvTable parse_parquet(std::string_view bytes, const std::string& name, const TableLimits& limits) {
  return pq::parse(bytes, name, limits);
}

}  // namespace kg::data
