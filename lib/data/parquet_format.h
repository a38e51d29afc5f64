// The Parquet reader's parts (lib/data/parquet*.cpp; data/table_read.h is the interface): Thrift's compact
// protocol, the FileMetaData and page headers kgtrain reads, and a leaf column's pages decoded into text.
// Internal to lib/data: the names live in kg::data::pq.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/error.h"
#include "data/table_read.h"

namespace kg::data::pq {

// --- Thrift compact protocol ---------------------------------------------------------------------------

enum : uint8_t {
  kStop = 0,
  kTrue = 1,
  kFalse = 2,
  kByte = 3,
  kI16 = 4,
  kI32 = 5,
  kI64 = 6,
  kDouble = 7,
  kBinary = 8,
  kList = 9,
  kSet = 10,
  kMap = 11,
  kStruct = 12
};

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
      case kTrue:
        return 1;
      case kFalse:
        return 0;
      case kByte:
        return static_cast<int8_t>(byte());
      case kI16:
      case kI32:
      case kI64:
        return zigzag();
      default:
        fail("an integer field of Thrift type " + std::to_string(type));
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
      case kTrue:
      case kFalse:
        return;
      case kByte:
        byte();
        return;
      case kI16:
      case kI32:
      case kI64:
        varint();
        return;
      case kDouble:
        if (end - p < 8) fail("truncated double");
        p += 8;
        return;
      case kBinary:
        binary(type);
        return;
      case kList:
      case kSet:
        list(type, [&](uint8_t t) {
          if (t == kTrue || t == kFalse)
            byte();  // booleans in a list take a byte each
          else
            skip(t);
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
            if (t == kTrue || t == kFalse)
              byte();
            else
              skip(t);
          }
        }
        return;
      }
      case kStruct:
        fields([](int64_t, uint8_t) { return false; });
        return;
      default:
        fail("unknown Thrift type " + std::to_string(type));
    }
  }
};

// --- FileMetaData, the parts read ----------------------------------------------------------------------

enum PhysType {
  kBoolean = 0,
  kInt32 = 1,
  kInt64 = 2,
  kInt96 = 3,
  kFloat = 4,
  kDoubleT = 5,
  kByteArray = 6,
  kFixed = 7
};
const char* phys_name(int t);

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

struct PageHeader {
  int type = -1;
  int64_t uncompressed = -1, compressed = -1;
  int64_t num_values = -1;
  int encoding = 0;
  int64_t num_nulls = 0, def_len = 0, rep_len = 0;  // v2
  bool v2_compressed = true;
};

// How one leaf's values become text.
enum class Kind {
  text,
  binary,
  boolean,
  i32,
  u32,
  i64,
  u64,
  date,
  float32,
  float64,
  decimal32,
  decimal64,
  float16,
  unusable
};

struct Leaf {
  SchemaElem elem;
  int max_def = 0, max_rep = 0;
  int top = -1;  // the top-level column it belongs to
  Kind kind = Kind::unusable;
  std::string type_text;  // for messages
};

// A top-level column: a primitive leaf, or the Image struct (bytes, path leaves).

// Decoded values of one leaf in one row group: text per non-null value, and the definition levels.
struct Decoded {
  std::vector<std::string> values;
  std::vector<uint8_t> present;  // per row: 1 when the value is not null (def == max_def)
};

FileMeta read_file_meta(Thrift& t);
PageHeader read_page_header(Thrift& t);
// "string", "int16", "decimal(9,2)", ... ("" for none).
std::string logical_text(const SchemaElem& e);
// Sets the leaf's kind and type_text from its physical and logical types.
void classify(Leaf& l);
// The leaf's values in one row group of `rows` rows (levels only when `discard`). DataError naming `file_name` and
// `column` when a page is damaged.
Decoded read_column_chunk(std::string_view file, const Leaf& leaf, const ChunkMeta& chunk, int64_t rows, bool discard,
                          const std::string& file_name, const std::string& column, const TableLimits& limits);

}  // namespace kg::data::pq
