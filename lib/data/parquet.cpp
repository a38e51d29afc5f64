// Parquet reading (data/table_read.h): the footer's FileMetaData in Thrift's compact protocol, read field by
// field (unknown fields skipped), then each row group's column chunks page by page: dictionary pages, data
// pages v1 and v2, PLAIN and dictionary (PLAIN_DICTIONARY / RLE_DICTIONARY) values, RLE/bit-packed definition
// levels and booleans; UNCOMPRESSED, SNAPPY, GZIP and ZSTD pages. Top-level columns only: primitive ones,
// and the Hugging Face Image feature's struct<bytes: binary, path: string>; any other nesting is unusable.
// Names at namespace scope are unique across lib/ (unity builds): the helpers live in kg::data::pq.
#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdint>
#include <cstring>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/strings.h"
#include "data/table_codecs.h"
#include "data/table_read.h"

namespace kg::data {
namespace table_text {

std::string half_to_text(uint16_t h) {
  const int sign = h >> 15, exp = (h >> 10) & 31, man = h & 1023;
  float f;
  if (exp == 0) f = std::ldexp(static_cast<float>(man), -24);
  else if (exp == 31) f = man ? std::numeric_limits<float>::quiet_NaN() : std::numeric_limits<float>::infinity();
  else f = std::ldexp(static_cast<float>(man | 1024), exp - 25);
  if (sign) f = -f;
  if (std::isnan(f)) return "";
  char buf[32];
  auto r = std::to_chars(buf, buf + sizeof buf, f);
  std::string s(buf, r.ptr);
  if (std::isfinite(f) && s.find_first_of(".e") == std::string::npos) s += ".0";
  return s;
}

std::string decimal_text(int64_t v, int64_t scale) {
  const bool neg = v < 0;
  const uint64_t mag = neg ? 0 - static_cast<uint64_t>(v) : static_cast<uint64_t>(v);
  std::string digits = std::to_string(mag);
  if (scale > 0) {
    if (scale > 38) return "";
    if (static_cast<int64_t>(digits.size()) <= scale)
      digits.insert(0, static_cast<size_t>(scale) - digits.size() + 1, '0');
    digits.insert(digits.size() - static_cast<size_t>(scale), ".");
  }
  return (neg ? "-" : "") + digits;
}

std::string date_text(int64_t days) {
  // Howard Hinnant's civil_from_days.
  days += 719468;
  const int64_t era = (days >= 0 ? days : days - 146096) / 146097;
  const int64_t doe = days - era * 146097;
  const int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
  const int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
  const int64_t mp = (5 * doy + 2) / 153;
  const int64_t d = doy - (153 * mp + 2) / 5 + 1;
  const int64_t m = mp < 10 ? mp + 3 : mp - 9;
  const int64_t y = yoe + era * 400 + (m <= 2);
  char buf[40];
  std::snprintf(buf, sizeof buf, "%04lld-%02lld-%02lld", static_cast<long long>(y), static_cast<long long>(m),
                static_cast<long long>(d));
  return buf;
}

std::string float_text(float f) {
  if (std::isnan(f)) return "";
  if (std::isinf(f)) return f > 0 ? "inf" : "-inf";
  char buf[32];
  auto r = std::to_chars(buf, buf + sizeof buf, f);
  std::string s(buf, r.ptr);
  if (s.find_first_of(".e") == std::string::npos) s += ".0";
  return s;
}

std::string double_text(double d) { return std::isnan(d) ? std::string() : format_double(d); }

}  // namespace table_text

namespace pq {
using table_text::date_text;
using table_text::decimal_text;
using table_text::double_text;
using table_text::float_text;
using table_text::half_to_text;

// --- Thrift compact protocol ---------------------------------------------------------------------------

enum : uint8_t { kStop = 0, kTrue = 1, kFalse = 2, kByte = 3, kI16 = 4, kI32 = 5, kI64 = 6, kDouble = 7,
                 kBinary = 8, kList = 9, kSet = 10, kMap = 11, kStruct = 12 };

struct Thrift {
  const uint8_t* p;
  const uint8_t* end;
  const std::string& what;  // "train.parquet footer"
  int depth = 0;

  [[noreturn]] void fail(const std::string& why) const { throw DataError(what + ": " + why); }
  uint8_t byte() {
    if (p == end) fail("truncated (Thrift data ends early)");
    return *p++;
  }
  uint64_t varint() {
    uint64_t v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      const uint8_t b = byte();
      v |= static_cast<uint64_t>(b & 0x7f) << shift;
      if (!(b & 0x80)) return v;
    }
    fail("a varint longer than 10 bytes");
  }
  int64_t zigzag() {
    const uint64_t v = varint();
    return static_cast<int64_t>(v >> 1) ^ -static_cast<int64_t>(v & 1);
  }
  // An integer or boolean field of any integer type.
  int64_t integer(uint8_t type) {
    switch (type) {
      case kTrue: return 1;
      case kFalse: return 0;
      case kByte: return static_cast<int8_t>(byte());
      case kI16: case kI32: case kI64: return zigzag();
      default: fail("an integer field of Thrift type " + std::to_string(type));
    }
  }
  std::string_view binary(uint8_t type) {
    if (type != kBinary) fail("a string field of Thrift type " + std::to_string(type));
    const uint64_t n = varint();
    if (n > static_cast<uint64_t>(end - p)) fail("a string of " + std::to_string(n) + " bytes past the end");
    std::string_view s(reinterpret_cast<const char*>(p), n);
    p += n;
    return s;
  }
  struct Enter {
    Thrift& t;
    explicit Enter(Thrift& t_) : t(t_) {
      if (++t.depth > 32) t.fail("structures nested more than 32 deep");
    }
    ~Enter() { --t.depth; }
  };
  // Calls f(id, type) for each field; f returns whether it consumed the value (else it is skipped).
  template <class F>
  void fields(F&& f) {
    Enter e(*this);
    int64_t last = 0;
    for (;;) {
      const uint8_t h = byte();
      const uint8_t type = h & 15;
      if (type == kStop) return;
      const int delta = h >> 4;
      const int64_t id = delta ? last + delta : zigzag();
      last = id;
      if (!f(id, type)) skip(type);
    }
  }
  // Calls f(element_type) for each element.
  template <class F>
  void list(uint8_t type, F&& f) {
    if (type != kList && type != kSet) fail("a list field of Thrift type " + std::to_string(type));
    Enter e(*this);
    const uint8_t h = byte();
    uint64_t n = h >> 4;
    if (n == 15) n = varint();
    if (n > static_cast<uint64_t>(end - p)) fail("a list of " + std::to_string(n) + " elements past the end");
    for (uint64_t i = 0; i < n; ++i) f(static_cast<uint8_t>(h & 15));
  }
  void skip(uint8_t type) {
    switch (type) {
      case kTrue: case kFalse: return;
      case kByte: byte(); return;
      case kI16: case kI32: case kI64: varint(); return;
      case kDouble:
        if (end - p < 8) fail("truncated double");
        p += 8;
        return;
      case kBinary: binary(type); return;
      case kList: case kSet:
        list(type, [&](uint8_t t) {
          if (t == kTrue || t == kFalse) byte();  // booleans in a list take a byte each
          else skip(t);
        });
        return;
      case kMap: {
        Enter e(*this);
        const uint64_t n = varint();
        if (n == 0) return;
        if (n > static_cast<uint64_t>(end - p)) fail("a map past the end");
        const uint8_t kv = byte();
        for (uint64_t i = 0; i < n; ++i) {
          for (uint8_t t : {static_cast<uint8_t>(kv >> 4), static_cast<uint8_t>(kv & 15)}) {
            if (t == kTrue || t == kFalse) byte();
            else skip(t);
          }
        }
        return;
      }
      case kStruct: fields([](int64_t, uint8_t) { return false; }); return;
      default: fail("unknown Thrift type " + std::to_string(type));
    }
  }
};

// --- FileMetaData, the parts read ----------------------------------------------------------------------

enum PhysType { kBoolean = 0, kInt32 = 1, kInt64 = 2, kInt96 = 3, kFloat = 4, kDoubleT = 5, kByteArray = 6,
                kFixed = 7 };
const char* phys_name(int t) {
  static const char* n[] = {"BOOLEAN", "INT32", "INT64", "INT96", "FLOAT", "DOUBLE", "BYTE_ARRAY",
                            "FIXED_LEN_BYTE_ARRAY"};
  return t >= 0 && t < 8 ? n[t] : "an unknown physical type";
}

struct SchemaElem {
  int type = -1;  // -1: a group
  int64_t type_length = 0;
  int repetition = 0;  // 0 required, 1 optional, 2 repeated
  std::string name;
  int64_t num_children = 0;
  int converted = -1;
  int64_t scale = 0, precision = 0;
  int logical = -1;  // LogicalType union field id
  int int_bits = 0;
  bool int_signed = true;
};

struct ChunkMeta {
  int type = -1;
  int codec = 0;
  int64_t num_values = 0;
  int64_t data_page_offset = -1, dictionary_page_offset = -1, total_compressed_size = 0;
  std::vector<std::string> path;
};

struct RowGroupMeta {
  int64_t num_rows = 0;
  std::vector<ChunkMeta> chunks;
};

struct FileMeta {
  std::vector<SchemaElem> schema;
  int64_t num_rows = 0;
  std::vector<RowGroupMeta> row_groups;
};

SchemaElem read_schema_elem(Thrift& t) {
  SchemaElem e;
  t.fields([&](int64_t id, uint8_t ty) {
    switch (id) {
      case 1: e.type = static_cast<int>(t.integer(ty)); return true;
      case 2: e.type_length = t.integer(ty); return true;
      case 3: e.repetition = static_cast<int>(t.integer(ty)); return true;
      case 4: e.name = std::string(t.binary(ty)); return true;
      case 5: e.num_children = t.integer(ty); return true;
      case 6: e.converted = static_cast<int>(t.integer(ty)); return true;
      case 7: e.scale = t.integer(ty); return true;
      case 8: e.precision = t.integer(ty); return true;
      case 10:
        if (ty != kStruct) return false;
        t.fields([&](int64_t lid, uint8_t lty) {
          e.logical = static_cast<int>(lid);
          if (lid == 10 && lty == kStruct) {  // IntType
            t.fields([&](int64_t iid, uint8_t ity) {
              if (iid == 1) e.int_bits = static_cast<int>(t.integer(ity));
              else if (iid == 2) e.int_signed = t.integer(ity) != 0;
              else return false;
              return true;
            });
            return true;
          }
          if (lid == 5 && lty == kStruct) {  // DecimalType
            t.fields([&](int64_t did, uint8_t dty) {
              if (did == 1) e.scale = t.integer(dty);
              else if (did == 2) e.precision = t.integer(dty);
              else return false;
              return true;
            });
            return true;
          }
          return false;
        });
        return true;
      default: return false;
    }
  });
  return e;
}

ChunkMeta read_chunk(Thrift& t) {
  ChunkMeta c;
  t.fields([&](int64_t id, uint8_t ty) {
    if (id != 3 || ty != kStruct) return false;  // ColumnChunk.meta_data
    t.fields([&](int64_t mid, uint8_t mty) {
      switch (mid) {
        case 1: c.type = static_cast<int>(t.integer(mty)); return true;
        case 3: t.list(mty, [&](uint8_t et) { c.path.emplace_back(t.binary(et)); }); return true;
        case 4: c.codec = static_cast<int>(t.integer(mty)); return true;
        case 5: c.num_values = t.integer(mty); return true;
        case 7: c.total_compressed_size = t.integer(mty); return true;
        case 9: c.data_page_offset = t.integer(mty); return true;
        case 11: c.dictionary_page_offset = t.integer(mty); return true;
        default: return false;
      }
    });
    return true;
  });
  return c;
}

FileMeta read_file_meta(Thrift& t) {
  FileMeta m;
  t.fields([&](int64_t id, uint8_t ty) {
    switch (id) {
      case 2:
        t.list(ty, [&](uint8_t et) {
          if (et != kStruct) t.fail("schema elements that are not structs");
          m.schema.push_back(read_schema_elem(t));
        });
        return true;
      case 3: m.num_rows = t.integer(ty); return true;
      case 4:
        t.list(ty, [&](uint8_t et) {
          if (et != kStruct) t.fail("row groups that are not structs");
          RowGroupMeta g;
          t.fields([&](int64_t gid, uint8_t gty) {
            if (gid == 1) {
              t.list(gty, [&](uint8_t ct) {
                if (ct != kStruct) t.fail("column chunks that are not structs");
                g.chunks.push_back(read_chunk(t));
              });
              return true;
            }
            if (gid == 3) {
              g.num_rows = t.integer(gty);
              return true;
            }
            return false;
          });
          m.row_groups.push_back(std::move(g));
        });
        return true;
      default: return false;
    }
  });
  return m;
}

struct PageHeader {
  int type = -1;
  int64_t uncompressed = -1, compressed = -1;
  int64_t num_values = -1;
  int encoding = 0;
  int64_t num_nulls = 0, def_len = 0, rep_len = 0;  // v2
  bool v2_compressed = true;
};

PageHeader read_page_header(Thrift& t) {
  PageHeader h;
  t.fields([&](int64_t id, uint8_t ty) {
    switch (id) {
      case 1: h.type = static_cast<int>(t.integer(ty)); return true;
      case 2: h.uncompressed = t.integer(ty); return true;
      case 3: h.compressed = t.integer(ty); return true;
      case 5:  // DataPageHeader
      case 7:  // DictionaryPageHeader
        if (ty != kStruct) return false;
        t.fields([&](int64_t did, uint8_t dty) {
          if (did == 1) h.num_values = t.integer(dty);
          else if (did == 2) h.encoding = static_cast<int>(t.integer(dty));
          else return false;
          return true;
        });
        return true;
      case 8:  // DataPageHeaderV2
        if (ty != kStruct) return false;
        t.fields([&](int64_t did, uint8_t dty) {
          switch (did) {
            case 1: h.num_values = t.integer(dty); return true;
            case 2: h.num_nulls = t.integer(dty); return true;
            case 4: h.encoding = static_cast<int>(t.integer(dty)); return true;
            case 5: h.def_len = t.integer(dty); return true;
            case 6: h.rep_len = t.integer(dty); return true;
            case 7: h.v2_compressed = t.integer(dty) != 0; return true;
            default: return false;
          }
        });
        return true;
      default: return false;
    }
  });
  return h;
}

// --- columns -------------------------------------------------------------------------------------------

// How one leaf's values become text.
enum class Kind { text, binary, boolean, i32, u32, i64, u64, date, float32, float64, decimal32, decimal64,
                  float16, unusable };

struct Leaf {
  SchemaElem elem;
  int max_def = 0, max_rep = 0;
  int top = -1;  // the top-level column it belongs to
  Kind kind = Kind::unusable;
  std::string type_text;  // for messages
};

// A top-level column: a primitive leaf, or the Image struct (bytes, path leaves).
struct Column {
  std::string name;
  int leaf = -1;                   // primitive: its leaf
  int bytes_leaf = -1, path_leaf = -1;  // the Image struct
  std::string unusable;            // what it holds, when kgtrain cannot read it
};

std::string logical_text(const SchemaElem& e) {
  switch (e.logical) {
    case 1: return "string";
    case 2: return "map";
    case 3: return "list";
    case 4: return "enum";
    case 5: return "decimal(" + std::to_string(e.precision) + "," + std::to_string(e.scale) + ")";
    case 6: return "date";
    case 7: return "time";
    case 8: return "timestamp";
    case 10: return std::string(e.int_signed ? "int" : "uint") + std::to_string(e.int_bits);
    case 12: return "json";
    case 13: return "bson";
    case 14: return "uuid";
    case 15: return "float16";
    default: break;
  }
  switch (e.converted) {
    case 0: return "string";
    case 5: return "decimal(" + std::to_string(e.precision) + "," + std::to_string(e.scale) + ")";
    case 6: return "date";
    case 7: case 8: return "time";
    case 9: case 10: return "timestamp";
    default: return "";
  }
}

void classify(Leaf& l) {
  const SchemaElem& e = l.elem;
  const std::string lt = logical_text(e);
  l.type_text = std::string(phys_name(e.type)) + (lt.empty() ? "" : " (" + lt + ")");
  const bool is_unsigned = (e.logical == 10 && !e.int_signed) || (e.converted >= 11 && e.converted <= 14);
  const bool is_decimal = e.logical == 5 || e.converted == 5;
  const bool is_date = e.logical == 6 || e.converted == 6;
  const bool is_time = e.logical == 7 || e.logical == 8 || (e.converted >= 7 && e.converted <= 10);
  if (is_time) return;  // unusable: no text form a CSV would hold that all readers agree on
  switch (e.type) {
    case kBoolean: l.kind = Kind::boolean; return;
    case kInt32:
      l.kind = is_decimal ? Kind::decimal32 : is_date ? Kind::date : is_unsigned ? Kind::u32 : Kind::i32;
      return;
    case kInt64: l.kind = is_decimal ? Kind::decimal64 : is_unsigned ? Kind::u64 : Kind::i64; return;
    case kFloat: l.kind = Kind::float32; return;
    case kDoubleT: l.kind = Kind::float64; return;
    case kByteArray:
      if (is_decimal) return;
      l.kind = (e.logical == 1 || e.logical == 4 || e.logical == 12 || e.converted == 0 || e.converted == 4 ||
                e.converted == 19)
                   ? Kind::text
                   : Kind::binary;
      return;
    case kFixed:
      if (e.logical == 15 && e.type_length == 2) l.kind = Kind::float16;
      else if (!is_decimal && e.logical != 14) l.kind = Kind::binary;
      return;
    default: return;  // INT96 (legacy timestamps) and anything unknown
  }
}

// --- values --------------------------------------------------------------------------------------------

struct Reader {
  const std::string& name;
  const TableLimits& limits;
};

template <class T>
T load(const uint8_t* p) {
  T v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

// Decoded values of one leaf in one row group: text per non-null value, and the definition levels.
struct Decoded {
  std::vector<std::string> values;
  std::vector<uint8_t> present;  // per row: 1 when the value is not null (def == max_def)
};

// The RLE / bit-packed hybrid: reads `count` values of `width` bits from [p, end).
void read_hybrid(const uint8_t* p, const uint8_t* end, int width, size_t count, std::vector<uint32_t>& out,
                 const std::string& what) {
  if (width < 0 || width > 32) throw DataError(what + ": a bit width of " + std::to_string(width));
  out.clear();
  out.reserve(count);
  const size_t value_bytes = (static_cast<size_t>(width) + 7) / 8;
  while (out.size() < count) {
    uint64_t h = 0;
    for (int shift = 0;; shift += 7) {
      if (p == end || shift > 35) throw DataError(what + ": truncated RLE/bit-packed run");
      const uint8_t b = *p++;
      h |= static_cast<uint64_t>(b & 0x7f) << shift;
      if (!(b & 0x80)) break;
    }
    if (h & 1) {  // bit-packed groups of 8
      const uint64_t groups = h >> 1;
      const uint64_t bytes = groups * static_cast<uint64_t>(width);  // groups * 8 values * width bits / 8
      if (groups == 0 || bytes > static_cast<uint64_t>(end - p))
        throw DataError(what + ": truncated bit-packed run");
      const uint64_t n = std::min<uint64_t>(groups * 8, count - out.size());
      uint64_t bit = 0;
      for (uint64_t i = 0; i < n; ++i) {
        uint64_t v = 0;
        for (int b = 0; b < width; ++b, ++bit) v |= static_cast<uint64_t>((p[bit >> 3] >> (bit & 7)) & 1) << b;
        out.push_back(static_cast<uint32_t>(v));
      }
      p += bytes;
    } else {  // a run of one value
      const uint64_t n = h >> 1;
      if (value_bytes > static_cast<size_t>(end - p)) throw DataError(what + ": truncated RLE run");
      uint32_t v = 0;
      for (size_t b = 0; b < value_bytes; ++b) v |= static_cast<uint32_t>(p[b]) << (8 * b);
      p += value_bytes;
      if (n == 0) throw DataError(what + ": an empty RLE run");
      const uint64_t take = std::min<uint64_t>(n, count - out.size());
      out.insert(out.end(), take, v);
    }
  }
}

int bit_width(int64_t max_value) {
  int w = 0;
  while (max_value > 0) ++w, max_value >>= 1;
  return w;
}

struct ChunkReader {
  const Reader& r;
  std::string_view file;
  const Leaf& leaf;
  const std::string& column;  // the top-level column's name, for messages
  int codec;
  std::vector<std::string> dict;
  bool have_dict = false;
  bool discard = false;  // levels only (the image bytes: what is there matters, not the bytes)
  Decoded out;

  std::string what() const { return r.name + ": column \"" + column + "\""; }
  [[noreturn]] void fail(const std::string& why) const { throw DataError(what() + ": " + why); }

  std::string decompress(std::string_view in, int64_t uncompressed) {
    if (uncompressed < 0) fail("a page with a negative size");
    const size_t n = static_cast<size_t>(uncompressed);
    const std::string w = what() + " page";
    switch (codec) {
      case 0:
        if (in.size() != n) fail("an uncompressed page whose two sizes differ");
        return std::string(in);
      case 1: return snappy_decompress(in, n, r.limits.max_block_bytes, w);
      case 2: return gzip_decompress(in, n, r.limits.max_block_bytes, w);
      case 6: return zstd_decompress(in, n, r.limits.max_block_bytes, w);
      default: {
        static const char* names[] = {"UNCOMPRESSED", "SNAPPY", "GZIP", "LZO", "BROTLI", "LZ4", "ZSTD", "LZ4_RAW"};
        fail(std::string("compressed with ") + (codec >= 0 && codec < 8 ? names[codec] : "an unknown codec") +
             ", which kgtrain does not read (it reads SNAPPY, GZIP, ZSTD and uncompressed files: rewrite it, "
             "e.g. pandas' df.to_parquet(path) or pyarrow.parquet.write_table(t, path, compression='snappy'))");
      }
    }
  }

  // PLAIN values, `n` of them, from [p, end); appended to `to`.
  void plain(const uint8_t* p, const uint8_t* end, size_t n, std::vector<std::string>& to) {
    const int t = leaf.elem.type;
    auto need = [&](size_t bytes) {
      if (static_cast<size_t>(end - p) < bytes) fail("a page whose values end early (truncated or damaged)");
    };
    if (t == kBoolean) {
      need((n + 7) / 8);
      for (size_t i = 0; i < n; ++i) to.push_back(((p[i >> 3] >> (i & 7)) & 1) ? "True" : "False");
      return;
    }
    if (t == kByteArray) {
      for (size_t i = 0; i < n; ++i) {
        need(4);
        const uint32_t len = load<uint32_t>(p);
        p += 4;
        need(len);
        to.push_back(value_text(std::string_view(reinterpret_cast<const char*>(p), len)));
        p += len;
      }
      return;
    }
    size_t width = 0;
    switch (t) {
      case kInt32: case kFloat: width = 4; break;
      case kInt64: case kDoubleT: width = 8; break;
      case kInt96: width = 12; break;
      case kFixed:
        if (leaf.elem.type_length <= 0 || leaf.elem.type_length > (int64_t{1} << 24))
          fail("a FIXED_LEN_BYTE_ARRAY of length " + std::to_string(leaf.elem.type_length));
        width = static_cast<size_t>(leaf.elem.type_length);
        break;
      default: fail(std::string("values of ") + phys_name(t));
    }
    if (n > static_cast<size_t>(end - p) / width) need(SIZE_MAX);
    for (size_t i = 0; i < n; ++i, p += width) {
      if (discard) {
        to.emplace_back();
        continue;
      }
      switch (leaf.kind) {
        case Kind::i32: to.push_back(std::to_string(load<int32_t>(p))); break;
        case Kind::u32: to.push_back(std::to_string(load<uint32_t>(p))); break;
        case Kind::i64: to.push_back(std::to_string(load<int64_t>(p))); break;
        case Kind::u64: to.push_back(std::to_string(load<uint64_t>(p))); break;
        case Kind::date: to.push_back(date_text(load<int32_t>(p))); break;
        case Kind::decimal32: to.push_back(decimal_text(load<int32_t>(p), leaf.elem.scale)); break;
        case Kind::decimal64: to.push_back(decimal_text(load<int64_t>(p), leaf.elem.scale)); break;
        case Kind::float32: to.push_back(float_text(load<float>(p))); break;
        case Kind::float64: to.push_back(double_text(load<double>(p))); break;
        case Kind::float16: to.push_back(half_to_text(load<uint16_t>(p))); break;
        case Kind::binary: case Kind::text:
          to.push_back(value_text(std::string_view(reinterpret_cast<const char*>(p), width)));
          break;
        default: to.emplace_back(); break;
      }
    }
  }

  // A BYTE_ARRAY / FIXED_LEN_BYTE_ARRAY value: text is checked when read (cells need the row: see finish).
  std::string value_text(std::string_view s) const {
    if (discard) return std::string();
    if (s.size() > (size_t{16} << 20) && leaf.kind == Kind::text)
      fail("a string of " + std::to_string(s.size()) + " bytes, more than a cell may hold (16 MiB)");
    return std::string(s);
  }

  size_t cells_so_far() const { return out.present.size(); }

  void page_values(const uint8_t* p, const uint8_t* end, int encoding, size_t non_null, bool v1_rle_bool) {
    auto& to = out.values;
    if (encoding == 0) {  // PLAIN
      plain(p, end, non_null, to);
      return;
    }
    if (encoding == 2 || encoding == 8) {  // PLAIN_DICTIONARY, RLE_DICTIONARY
      if (!have_dict) fail("a dictionary-encoded page without a dictionary page");
      if (non_null == 0) return;
      if (p == end) fail("a dictionary-encoded page without its bit width");
      const int width = *p++;
      std::vector<uint32_t> idx;
      read_hybrid(p, end, width, non_null, idx, what());
      for (uint32_t i : idx) {
        if (i >= dict.size())
          fail("a dictionary index " + std::to_string(i) + " past the dictionary's " + std::to_string(dict.size()) +
               " values");
        to.push_back(dict[i]);
      }
      return;
    }
    if (encoding == 3 && leaf.elem.type == kBoolean) {  // RLE booleans: 4-byte length, then the hybrid
      (void)v1_rle_bool;
      if (end - p < 4) fail("a truncated RLE boolean page");
      const uint32_t len = load<uint32_t>(p);
      p += 4;
      if (len > static_cast<size_t>(end - p)) fail("an RLE boolean page longer than its page");
      std::vector<uint32_t> v;
      read_hybrid(p, p + len, 1, non_null, v, what());
      for (uint32_t b : v) to.push_back(b ? "True" : "False");
      return;
    }
    static const char* names[] = {"PLAIN", "GROUP_VAR_INT", "PLAIN_DICTIONARY", "RLE", "BIT_PACKED",
                                  "DELTA_BINARY_PACKED", "DELTA_LENGTH_BYTE_ARRAY", "DELTA_BYTE_ARRAY",
                                  "RLE_DICTIONARY", "BYTE_STREAM_SPLIT"};
    fail(std::string("values encoded as ") + (encoding >= 0 && encoding < 10 ? names[encoding] : "an unknown encoding") +
         ", which kgtrain does not read (it reads PLAIN and dictionary encodings, pyarrow's and pandas' defaults)");
  }

  void levels_to_present(const std::vector<uint32_t>& def, size_t& non_null) {
    non_null = 0;
    for (uint32_t d : def) {
      if (d > static_cast<uint32_t>(leaf.max_def)) fail("a definition level past the column's maximum");
      const bool here = d == static_cast<uint32_t>(leaf.max_def);
      out.present.push_back(here);
      non_null += here;
    }
  }

  void check_cells(size_t more) const {
    if (more > r.limits.max_cells || cells_so_far() > r.limits.max_cells - more)
      fail("more than " + std::to_string(r.limits.max_cells) + " values in a row group (a damaged or hostile file?)");
  }

  void read(const ChunkMeta& c, int64_t rows) {
    if (rows == 0) return;  // pyarrow writes an empty table as one row group of no rows, its chunks at offset 0
    int64_t start = c.data_page_offset;
    if (c.dictionary_page_offset > 0 && c.dictionary_page_offset < start) start = c.dictionary_page_offset;
    if (start < 4 || static_cast<uint64_t>(start) >= file.size())
      fail("a column chunk that starts outside the file (offset " + std::to_string(start) + ")");
    const uint8_t* base = reinterpret_cast<const uint8_t*>(file.data());
    const uint8_t* p = base + start;
    // The chunk's stated size bounds its pages when it lies inside the file; else the file does.
    const uint8_t* end = base + file.size();
    if (c.total_compressed_size > 0 && static_cast<uint64_t>(c.total_compressed_size) <= file.size() - start)
      end = p + c.total_compressed_size;
    const size_t want = static_cast<size_t>(rows);
    while (out.present.size() < want) {
      if (p >= end) fail("its pages end after " + std::to_string(out.present.size()) + " of " + std::to_string(rows) +
                         " rows of a row group (truncated or damaged file)");
      const std::string w = what() + " page header";
      Thrift t{p, end, w};
      const PageHeader h = read_page_header(t);
      p = t.p;
      if (h.compressed < 0 || h.compressed > end - p) fail("a page longer than its column chunk (truncated file?)");
      std::string_view body(reinterpret_cast<const char*>(p), static_cast<size_t>(h.compressed));
      p += h.compressed;
      if (h.type == 2) {  // dictionary page
        if (h.num_values < 0) fail("a dictionary page with a negative count");
        const std::string data = decompress(body, h.uncompressed);
        check_cells(static_cast<size_t>(h.num_values));
        if (h.num_values > static_cast<int64_t>(data.size()) + 8) fail("a dictionary page with more values than bytes");
        dict.clear();
        const auto* d = reinterpret_cast<const uint8_t*>(data.data());
        plain(d, d + data.size(), static_cast<size_t>(h.num_values), dict);
        have_dict = true;
        continue;
      }
      if (h.type != 0 && h.type != 3) continue;  // index pages and unknown ones
      if (h.num_values < 0) fail("a data page with a negative count");
      const size_t n = static_cast<size_t>(h.num_values);
      check_cells(n);
      if (cells_so_far() + n > want) fail("a data page with more values than its row group has rows");
      std::vector<uint32_t> def;
      size_t non_null = n;
      if (h.type == 0) {  // v1: levels then values, all compressed
        const std::string data = decompress(body, h.uncompressed);
        const auto* d = reinterpret_cast<const uint8_t*>(data.data());
        const uint8_t* de = d + data.size();
        if (leaf.max_def > 0) {
          if (de - d < 4) fail("a data page without its definition levels");
          const uint32_t len = load<uint32_t>(d);
          d += 4;
          if (len > static_cast<size_t>(de - d)) fail("definition levels longer than their page");
          read_hybrid(d, d + len, bit_width(leaf.max_def), n, def, what());
          d += len;
          levels_to_present(def, non_null);
        } else {
          out.present.insert(out.present.end(), n, 1);
        }
        page_values(d, de, h.encoding, non_null, true);
      } else {  // v2: levels uncompressed ahead of the (maybe compressed) values
        if (h.def_len < 0 || h.rep_len < 0 || h.rep_len + h.def_len > h.compressed)
          fail("a data page v2 whose level sizes do not fit it");
        if (h.rep_len) fail("repetition levels in a column kgtrain reads as flat");
        const auto* lv = reinterpret_cast<const uint8_t*>(body.data());
        if (leaf.max_def > 0) {
          read_hybrid(lv, lv + h.def_len, bit_width(leaf.max_def), n, def, what());
          levels_to_present(def, non_null);
        } else {
          out.present.insert(out.present.end(), n, 1);
        }
        std::string_view rest = body.substr(static_cast<size_t>(h.def_len));
        const int64_t rest_size = h.uncompressed - h.def_len;
        std::string data = h.v2_compressed && codec != 0 ? decompress(rest, rest_size) : std::string(rest);
        const auto* d = reinterpret_cast<const uint8_t*>(data.data());
        page_values(d, d + data.size(), h.encoding, non_null, false);
      }
    }
    size_t nn = 0;
    for (uint8_t x : out.present) nn += x;
    if (nn != out.values.size()) fail("a page whose values disagree with its definition levels");
  }
};

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
  FileMeta meta = read_file_meta(t);
  KG_CHECK(!meta.schema.empty(), DataError, name, ": a footer without a schema");

  // The schema: a depth-first list; the root's children are the columns.
  std::vector<Leaf> leaves;
  std::vector<Column> cols;
  size_t at = 1;
  auto describe = [&](auto&& self, size_t& i, int depth) -> std::string {  // the type of a subtree, skipped
    KG_CHECK(i < meta.schema.size() && depth < 32, DataError, name, ": a damaged schema");
    const SchemaElem& e = meta.schema[i++];
    std::string s;
    if (e.num_children <= 0) {
      Leaf l;
      l.elem = e;
      classify(l);
      s = l.type_text;
      l.top = static_cast<int>(cols.size());
      leaves.push_back(l);  // kept so that leaf i is column chunk i
    } else {
      KG_CHECK(e.num_children <= static_cast<int64_t>(meta.schema.size() - i), DataError, name,
               ": a damaged schema (a group with more children than elements)");
      const std::string lt = logical_text(e);
      s = (lt == "list" || lt == "map") ? lt + "<" : "struct<";
      for (int64_t c = 0; c < e.num_children; ++c) {
        const std::string child = meta.schema.size() > i ? meta.schema[i].name : "";
        s += (c ? ", " : "") + child + ": " + self(self, i, depth + 1);
      }
      s += ">";
    }
    if (e.repetition == 2) s = "repeated " + s;
    return s;
  };
  const int64_t ncols = meta.schema[0].num_children;
  KG_CHECK(ncols >= 0 && ncols <= static_cast<int64_t>(meta.schema.size()) - 1, DataError, name,
           ": a damaged schema (the root has ", ncols, " columns)");
  for (int64_t c = 0; c < ncols; ++c) {
    KG_CHECK(at < meta.schema.size(), DataError, name, ": a damaged schema");
    const SchemaElem& e = meta.schema[at];
    Column col;
    col.name = kg::trim(e.name);
    const size_t first_leaf = leaves.size();
    size_t j = at;
    const std::string type = describe(describe, j, 0);
    const bool image = e.num_children == 2 && e.repetition != 2 && leaves.size() == first_leaf + 2 &&
                       meta.schema[at + 1].name == "bytes" && meta.schema[at + 2].name == "path" &&
                       meta.schema[at + 1].type == kByteArray && meta.schema[at + 2].type == kByteArray &&
                       meta.schema[at + 1].repetition != 2 && meta.schema[at + 2].repetition != 2;
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
    for (size_t l = first_leaf; l < leaves.size(); ++l) {
      leaves[l].max_def = (e.repetition == 1) + (e.num_children > 0 && leaves[l].elem.repetition == 1);
    }
    at = j;
    cols.push_back(std::move(col));
  }
  {
    for (size_t c = 0; c < cols.size(); ++c) {
      for (size_t d = 0; d < c; ++d)
        KG_CHECK(cols[d].name != cols[c].name, DataError, name, ": duplicate column \"", cols[c].name, "\"");
      table.header.push_back(cols[c].name);
      if (!cols[c].unusable.empty()) table.unusable[static_cast<int>(c)] = cols[c].unusable;
    }
  }

  Reader rd{name, limits};
  for (size_t g = 0; g < meta.row_groups.size(); ++g) {
    const RowGroupMeta& rg = meta.row_groups[g];
    KG_CHECK(rg.chunks.size() == leaves.size(), DataError, name, ": row group ", g + 1, " has ", rg.chunks.size(),
             " column chunks, the schema ", leaves.size(), " columns");
    KG_CHECK(rg.num_rows >= 0, DataError, name, ": row group ", g + 1, " has a negative row count");
    const size_t rows = static_cast<size_t>(rg.num_rows);
    const size_t width = std::max<size_t>(1, cols.size());  // a row costs a vector even without columns
    KG_CHECK(rows <= limits.max_cells / width && table.rows.size() <= limits.max_cells / width - rows,
             DataError, name, ": more than ", limits.max_cells, " cells (rows x columns; a damaged or hostile file?)");
    const size_t base = table.rows.size();
    table.rows.resize(base + rows, std::vector<std::string>(cols.size()));
    for (size_t c = 0; c < cols.size(); ++c) {
      Column& col = cols[c];
      if (!col.unusable.empty()) continue;
      auto read_leaf = [&](int li, bool discard) {
        const Leaf& leaf = leaves[static_cast<size_t>(li)];
        const ChunkMeta& cm = rg.chunks[static_cast<size_t>(li)];
        ChunkReader cr{rd, bytes, leaf, col.name, cm.codec, {}, false, false, {}};
        cr.discard = discard;
        KG_CHECK(cm.type == leaf.elem.type, DataError, name, ": column \"", col.name,
                 "\": its chunk's type disagrees with the schema");
        cr.read(cm, rg.num_rows);
        return std::move(cr.out);
      };
      if (col.leaf >= 0) {
        Decoded d = read_leaf(col.leaf, false);
        const bool text = leaves[static_cast<size_t>(col.leaf)].kind == Kind::text;
        const bool binary = leaves[static_cast<size_t>(col.leaf)].kind == Kind::binary;
        size_t v = 0;
        for (size_t r = 0; r < rows; ++r) {
          if (!d.present[r]) continue;
          std::string& cell = table.rows[base + r][c];
          cell = std::move(d.values[v++]);
          if ((text || binary) && (invalid_utf8_at(cell) != std::string_view::npos || cell.find('\0') != std::string::npos)) {
            if (binary) {  // binary data that is not text: the column is unusable, the table is not
              table.unusable[static_cast<int>(c)] = "binary data (" + leaves[static_cast<size_t>(col.leaf)].type_text + ")";
              col.unusable = "binary";
              break;
            }
            const size_t at_byte = std::min(invalid_utf8_at(cell), cell.find('\0'));
            char hex[8];
            std::snprintf(hex, sizeof hex, "0x%02X", static_cast<unsigned char>(cell[at_byte]));
            throw DataError(table.where(base + r + 1) + ", column \"" + col.name + "\": " + hex + " at byte " +
                            std::to_string(at_byte + 1) +
                            (cell[at_byte] ? " is not valid UTF-8" : " is a NUL byte") +
                            " (a string column must hold UTF-8 text)");
          }
        }
        if (!col.unusable.empty())
          for (size_t r = 0; r < table.rows.size(); ++r) table.rows[r][c].clear();
      } else {  // the Image struct: its path, unless the bytes are in the table
        Decoded bytes_d = read_leaf(col.bytes_leaf, true);
        Decoded path_d = read_leaf(col.path_leaf, false);
        size_t v = 0;
        bool have_bytes = false;
        for (size_t r = 0; r < rows; ++r) {
          have_bytes = have_bytes || bytes_d.present[r];
          if (path_d.present[r]) table.rows[base + r][c] = std::move(path_d.values[v++]);
          const std::string& cell = table.rows[base + r][c];
          KG_CHECK(invalid_utf8_at(cell) == std::string_view::npos, DataError, table.where(base + r + 1),
                   ", column \"", col.name, "\": an image path that is not valid UTF-8");
        }
        if (have_bytes) {
          table.unusable[static_cast<int>(c)] =
              "image bytes (the Hugging Face Image feature, struct<bytes, path>, with the images inside the table)";
          col.unusable = "image bytes";
          for (size_t r = 0; r < table.rows.size(); ++r) table.rows[r][c].clear();
        }
      }
    }
  }
  return table;
}

}  // namespace pq

CsvTable parse_parquet(std::string_view bytes, const std::string& name, const TableLimits& limits) {
  return pq::parse(bytes, name, limits);
}

}  // namespace kg::data
