// A minimal Parquet writer for the tests: one row group, every column a required UTF-8 string (BYTE_ARRAY,
// PLAIN, uncompressed, one data page v1). Enough to turn a CSV fixture into train.parquet, and to build hostile
// files byte by byte (the pieces are exposed: compact-protocol Thrift, pages, footer).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace kg::test::parquet {

// Thrift compact protocol, written.
struct Thrift {
  std::string out;
  std::vector<int> last{0};
  void varint(uint64_t v) {
    while (v >= 0x80) {
      out.push_back(static_cast<char>((v & 0x7f) | 0x80));
      v >>= 7;
    }
    out.push_back(static_cast<char>(v));
  }
  void zigzag(int64_t v) { varint((static_cast<uint64_t>(v) << 1) ^ static_cast<uint64_t>(v >> 63)); }
  void field(int id, int type) {
    const int delta = id - last.back();
    if (delta > 0 && delta <= 15) {
      out.push_back(static_cast<char>((delta << 4) | type));
    } else {
      out.push_back(static_cast<char>(type));
      zigzag(id);
    }
    last.back() = id;
  }
  void i32(int id, int64_t v) { field(id, 5), zigzag(v); }
  void i64(int id, int64_t v) { field(id, 6), zigzag(v); }
  void bin(int id, const std::string& s) { field(id, 8), raw_bin(s); }
  void raw_bin(const std::string& s) { varint(s.size()), out += s; }
  void begin(int id) { field(id, 12), last.push_back(0); }  // a struct field
  void begin_elem() { last.push_back(0); }                  // a struct in a list
  void end() { out.push_back(0), last.pop_back(); }
  void list(int id, int elem_type, size_t n) {
    field(id, 9);
    if (n < 15) {
      out.push_back(static_cast<char>((n << 4) | elem_type));
    } else {
      out.push_back(static_cast<char>(0xf0 | elem_type));
      varint(n);
    }
  }
};

inline std::string le32(uint32_t v) {
  std::string s(4, '\0');
  for (int i = 0; i < 4; ++i) s[i] = static_cast<char>((v >> (8 * i)) & 0xff);
  return s;
}

// The file: `header` names the columns, `rows` the cells (each row header.size() wide).
inline std::string write_strings(const std::vector<std::string>& header,
                                 const std::vector<std::vector<std::string>>& rows) {
  std::string file = "PAR1";
  std::vector<int64_t> offsets, sizes;
  for (size_t c = 0; c < header.size(); ++c) {
    std::string values;
    for (const auto& r : rows) values += le32(static_cast<uint32_t>(r[c].size())) + r[c];
    Thrift h;
    h.i32(1, 0);  // DATA_PAGE
    h.i32(2, static_cast<int64_t>(values.size()));
    h.i32(3, static_cast<int64_t>(values.size()));
    h.begin(5);
    h.i32(1, static_cast<int64_t>(rows.size()));
    h.i32(2, 0);  // PLAIN
    h.i32(3, 3);  // RLE levels (none: the column is required)
    h.i32(4, 3);
    h.end();
    h.out.push_back(0);  // end of PageHeader
    offsets.push_back(static_cast<int64_t>(file.size()));
    sizes.push_back(static_cast<int64_t>(h.out.size() + values.size()));
    file += h.out + values;
  }
  Thrift m;
  m.i32(1, 1);
  m.list(2, 12, header.size() + 1);
  m.begin_elem();
  m.bin(4, "schema");
  m.i32(5, static_cast<int64_t>(header.size()));
  m.end();
  for (const auto& name : header) {
    m.begin_elem();
    m.i32(1, 6);  // BYTE_ARRAY
    m.i32(3, 0);  // REQUIRED
    m.bin(4, name);
    m.i32(6, 0);  // UTF8
    m.end();
  }
  m.i64(3, static_cast<int64_t>(rows.size()));
  m.list(4, 12, 1);
  m.begin_elem();
  m.list(1, 12, header.size());
  for (size_t c = 0; c < header.size(); ++c) {
    m.begin_elem();
    m.i64(2, offsets[c]);
    m.begin(3);
    m.i32(1, 6);
    m.list(2, 5, 1);
    m.zigzag(0);
    m.list(3, 8, 1);
    m.raw_bin(header[c]);
    m.i32(4, 0);  // UNCOMPRESSED
    m.i64(5, static_cast<int64_t>(rows.size()));
    m.i64(6, sizes[c]);
    m.i64(7, sizes[c]);
    m.i64(9, offsets[c]);
    m.end();
    m.end();
  }
  m.i64(2, 0);
  m.i64(3, static_cast<int64_t>(rows.size()));
  m.end();
  m.out.push_back(0);  // end of FileMetaData
  return file + m.out + le32(static_cast<uint32_t>(m.out.size())) + "PAR1";
}

}  // namespace kg::test::parquet
