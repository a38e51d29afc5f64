// The Arrow IPC reader's parts (lib/data/arrow_*.cpp; data/table_read.h is the interface): FlatBuffers read with
// every offset checked, the schema's fields, a record batch's nodes and buffers, and one column decoded into text.
// Internal to lib/data: the names live in kg::data::aipc.
#pragma once
#include <cstdint>
#include <cstring>
#include <deque>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/error.h"
#include "data/table_read.h"

namespace kg::data::aipc {

// --- FlatBuffers, checked ------------------------------------------------------------------------------

struct Fb {
  const uint8_t* base;
  size_t size;
  const std::string& what;

  [[noreturn]] void fail(const std::string& why) const { throw DataError(what + ": damaged metadata (" + why + ")"); }
  void need(size_t at, size_t n) const {
    if (at > size || n > size - at) fail("an offset past its end");
  }
  template <class T>
  T get(size_t at) const {
    need(at, sizeof(T));
    T v;
    std::memcpy(&v, base + at, sizeof v);
    return v;
  }
};

struct FbTable {
  const Fb* fb = nullptr;
  size_t pos = 0, vt = 0;
  uint16_t vsize = 0;

  static FbTable at(const Fb& fb, size_t pos) {
    FbTable t;
    t.fb = &fb;
    t.pos = pos;
    const int64_t vt = static_cast<int64_t>(pos) - fb.get<int32_t>(pos);
    if (vt < 0 || static_cast<uint64_t>(vt) >= fb.size) fb.fail("a vtable outside the buffer");
    t.vt = static_cast<size_t>(vt);
    t.vsize = fb.get<uint16_t>(t.vt);
    if (t.vsize < 4 || t.vsize % 2) fb.fail("a vtable of a bad size");
    fb.need(t.vt, t.vsize);
    return t;
  }
  size_t field(int i) const {  // the field's position, 0 when absent
    const size_t o = 4 + 2 * static_cast<size_t>(i);
    if (o + 2 > vsize) return 0;
    const uint16_t off = fb->get<uint16_t>(vt + o);
    return off ? pos + off : 0;
  }
  template <class T>
  T scalar(int i, T def) const {
    const size_t f = field(i);
    return f ? fb->get<T>(f) : def;
  }
  size_t deref(size_t f) const {
    const uint64_t target = f + static_cast<uint64_t>(fb->get<uint32_t>(f));
    if (target >= fb->size) fb->fail("a reference outside the buffer");
    return static_cast<size_t>(target);
  }
  bool has(int i) const { return field(i) != 0; }
  FbTable table(int i) const {
    const size_t f = field(i);
    if (!f) fb->fail("a missing table");
    return at(*fb, deref(f));
  }
  // A vector: its length and the position of its first element (elements of `elem` bytes).
  std::pair<size_t, size_t> vec(int i, size_t elem) const {
    const size_t f = field(i);
    if (!f) return {0, 0};
    const size_t v = deref(f);
    const uint32_t n = fb->get<uint32_t>(v);
    if (n > (fb->size - v - 4) / elem) fb->fail("a vector longer than the buffer");
    return {n, v + 4};
  }
  std::string str(int i) const {
    auto [n, at] = vec(i, 1);
    return n ? std::string(reinterpret_cast<const char*>(fb->base + at), n) : std::string();
  }
  FbTable table_in_vector(size_t elem_pos) const { return at(*fb, deref(elem_pos)); }
};

// --- schema --------------------------------------------------------------------------------------------

enum TypeId : uint8_t {
  tNone = 0,
  tNull = 1,
  tInt = 2,
  tFloat = 3,
  tBinary = 4,
  tUtf8 = 5,
  tBool = 6,
  tDecimal = 7,
  tDate = 8,
  tTime = 9,
  tTimestamp = 10,
  tInterval = 11,
  tList = 12,
  tStruct = 13,
  tUnion = 14,
  tFixedBinary = 15,
  tFixedList = 16,
  tMap = 17,
  tDuration = 18,
  tLargeBinary = 19,
  tLargeUtf8 = 20,
  tLargeList = 21,
  tRunEnd = 22,
  tBinaryView = 23,
  tUtf8View = 24,
  tListView = 25,
  tLargeListView = 26
};

struct Field {
  std::string name;
  uint8_t type = tNone;
  int bits = 0;  // Int: bitWidth; FloatingPoint: 16/32/64; Date: 32 (days) or 64 (ms)
  bool is_signed = true;
  int union_mode = 0;  // Union: 0 sparse, 1 dense
  bool dict = false;   // dictionary-encoded: values are indices of index_bits, the dictionary's type is `type`
  int64_t dict_id = 0;
  int index_bits = 32;
  bool index_signed = true;
  std::vector<Field> children;
};

// "int64", "large_string", "struct<bytes: binary, path: string>", "dictionary<string>", ...
std::string type_name(const Field& f);
// A Field table and its children (at most 32 deep).
Field read_field(const FbTable& t, int depth);

// --- record batches ------------------------------------------------------------------------------------

struct Node {
  int64_t length = 0, nulls = 0;
};

struct Batch {
  const std::string& what;
  const TableLimits& limits;
  std::vector<Node> nodes;
  std::vector<std::string_view> buffers;
  std::deque<std::string> owned;  // decompressed buffers
  size_t next_node = 0, next_buffer = 0;

  Batch(const std::string& w, const TableLimits& l) : what(w), limits(l) {}

  [[noreturn]] void fail(const std::string& why) const { throw DataError(what + ": " + why); }
  Node node() {
    if (next_node >= nodes.size()) fail("a record batch with fewer field nodes than its schema needs");
    return nodes[next_node++];
  }
  std::string_view buffer() {
    if (next_buffer >= buffers.size()) fail("a record batch with fewer buffers than its schema needs");
    return buffers[next_buffer++];
  }
  // Skips a field's nodes and buffers (a type kgtrain does not read).
  void skip(const Field& f) {
    node();
    if (f.dict) {
      buffer(), buffer();
      return;
    }
    int nbuf = 0;
    switch (f.type) {
      case tNull:
      case tRunEnd:
        nbuf = 0;
        break;
      case tStruct:
      case tFixedList:
        nbuf = 1;
        break;
      case tUnion:
        nbuf = f.union_mode == 1 ? 2 : 1;
        break;
      case tBinary:
      case tUtf8:
      case tLargeBinary:
      case tLargeUtf8:
        nbuf = 3;
        break;
      case tBinaryView:
      case tUtf8View:
      case tListView:
      case tLargeListView:
        fail("a column of " + type_name(f) + " (\"" + f.name + "\"), a type kgtrain does not read");
      default:
        nbuf = 2;
        break;  // validity + values (or offsets, for lists and maps)
    }
    for (int i = 0; i < nbuf; ++i) buffer();
    for (const Field& c : f.children) skip(c);
  }
};

// One column of text cells (nullopt: null), or why it cannot be read.
struct Cells {
  std::vector<std::string> text;
  std::vector<uint8_t> valid;
  std::string unusable;
};

template <class T>
T load_le(const char* p) {
  T v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

// The next column of the batch: `f`'s nodes and buffers decoded (dictionary-encoded columns through `dicts`), or
// skipped with Cells::unusable set when kgtrain does not read its type.
Cells decode_column(Batch& b, const std::map<int64_t, std::shared_ptr<Cells>>& dicts, const Field& f,
                    const std::string& col);

}  // namespace kg::data::aipc
