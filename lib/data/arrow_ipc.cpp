// Arrow IPC streams (data/table_read.h), the format of a Hugging Face `datasets` save_to_disk folder's .arrow
// shards: messages of a FlatBuffers header (Message: Schema, DictionaryBatch, RecordBatch; read here by hand,
// every offset checked, no FlatBuffers library) and a body of buffers. Top-level columns of integers, floats,
// booleans, dates, strings and binary (32- and 64-bit offsets), dictionary-encoded ones, null columns and the
// Image feature's struct<bytes, path>; any other type is unusable (CsvTable::unusable), its buffers skipped.
// Body compression: ZSTD (as the Parquet reader, when built with libzstd); LZ4_FRAME is refused by name.
// Names at namespace scope are unique across lib/ (unity builds): the helpers live in kg::data::aipc.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <deque>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/strings.h"
#include "data/table_codecs.h"
#include "data/table_read.h"

namespace kg::data {
namespace aipc {

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

enum TypeId : uint8_t { tNone = 0, tNull = 1, tInt = 2, tFloat = 3, tBinary = 4, tUtf8 = 5, tBool = 6,
                        tDecimal = 7, tDate = 8, tTime = 9, tTimestamp = 10, tInterval = 11, tList = 12,
                        tStruct = 13, tUnion = 14, tFixedBinary = 15, tFixedList = 16, tMap = 17, tDuration = 18,
                        tLargeBinary = 19, tLargeUtf8 = 20, tLargeList = 21, tRunEnd = 22, tBinaryView = 23,
                        tUtf8View = 24, tListView = 25, tLargeListView = 26 };

struct Field {
  std::string name;
  uint8_t type = tNone;
  int bits = 0;          // Int: bitWidth; FloatingPoint: 16/32/64; Date: 32 (days) or 64 (ms)
  bool is_signed = true;
  int union_mode = 0;    // Union: 0 sparse, 1 dense
  bool dict = false;     // dictionary-encoded: values are indices of index_bits, the dictionary's type is `type`
  int64_t dict_id = 0;
  int index_bits = 32;
  bool index_signed = true;
  std::vector<Field> children;
};

std::string type_name(const Field& f) {
  static const char* n[] = {"none", "null", "int", "float", "binary", "string", "bool", "decimal", "date",
                            "time", "timestamp", "interval", "list", "struct", "union", "fixed_size_binary",
                            "fixed_size_list", "map", "duration", "large_binary", "large_string", "large_list",
                            "run_end_encoded", "binary_view", "string_view", "list_view", "large_list_view"};
  std::string s = f.type <= 26 ? n[f.type] : "type " + std::to_string(f.type);
  if (f.type == tInt) s = std::string(f.is_signed ? "int" : "uint") + std::to_string(f.bits);
  if (f.type == tFloat) s = "float" + std::to_string(f.bits);
  if (!f.children.empty()) {
    s += "<";
    for (size_t i = 0; i < f.children.size(); ++i)
      s += (i ? ", " : "") + f.children[i].name + ": " + type_name(f.children[i]);
    s += ">";
  }
  if (f.dict) s = "dictionary<" + s + ">";
  return s;
}

Field read_field(const FbTable& t, int depth) {
  if (depth > 32) t.fb->fail("fields nested more than 32 deep");
  Field f;
  f.name = t.str(0);
  f.type = t.scalar<uint8_t>(2, tNone);
  if (t.has(3)) {
    const FbTable ty = t.table(3);
    if (f.type == tInt) {
      f.bits = ty.scalar<int32_t>(0, 0);
      f.is_signed = ty.scalar<uint8_t>(1, 0) != 0;
    } else if (f.type == tFloat) {
      const int16_t prec = ty.scalar<int16_t>(0, 0);
      f.bits = prec == 0 ? 16 : prec == 1 ? 32 : 64;
    } else if (f.type == tDate) {
      f.bits = ty.scalar<int16_t>(0, 1) == 0 ? 32 : 64;  // DateUnit: DAY (int32), MILLISECOND (int64)
    } else if (f.type == tUnion) {
      f.union_mode = ty.scalar<int16_t>(0, 0);
    }
  }
  if (t.has(4)) {  // DictionaryEncoding
    const FbTable d = t.table(4);
    f.dict = true;
    f.dict_id = d.scalar<int64_t>(0, 0);
    if (d.has(1)) {
      const FbTable it = d.table(1);
      f.index_bits = it.scalar<int32_t>(0, 32);
      f.index_signed = it.scalar<uint8_t>(1, 0) != 0;
    }
  }
  auto [n, at] = t.vec(5, 4);
  for (size_t i = 0; i < n; ++i) f.children.push_back(read_field(t.table_in_vector(at + 4 * i), depth + 1));
  return f;
}

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
      case tNull: case tRunEnd: nbuf = 0; break;
      case tStruct: case tFixedList: nbuf = 1; break;
      case tUnion: nbuf = f.union_mode == 1 ? 2 : 1; break;
      case tBinary: case tUtf8: case tLargeBinary: case tLargeUtf8: nbuf = 3; break;
      case tBinaryView: case tUtf8View: case tListView: case tLargeListView:
        fail("a column of " + type_name(f) + " (\"" + f.name + "\"), a type kgtrain does not read");
      default: nbuf = 2; break;  // validity + values (or offsets, for lists and maps)
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

struct Decoder {
  Batch& b;
  const std::map<int64_t, std::shared_ptr<Cells>>& dicts;

  std::vector<uint8_t> validity(std::string_view buf, const Node& n, const std::string& col) {
    std::vector<uint8_t> v(static_cast<size_t>(n.length), 1);
    if (n.nulls == 0 || buf.empty()) {
      if (n.nulls != 0 && n.nulls == n.length) std::fill(v.begin(), v.end(), 0);
      return v;
    }
    if (buf.size() < (v.size() + 7) / 8) b.fail("column \"" + col + "\": a validity bitmap shorter than its column");
    for (size_t i = 0; i < v.size(); ++i) v[i] = (static_cast<uint8_t>(buf[i >> 3]) >> (i & 7)) & 1;
    return v;
  }

  void check_length(const Node& n, const std::string& col) {
    if (n.length < 0 || static_cast<uint64_t>(n.length) > b.limits.max_cells)
      b.fail("column \"" + col + "\": a length of " + std::to_string(n.length) + " values");
  }

  // Values of a fixed width: `n` of them in `buf`.
  void need(std::string_view buf, size_t n, size_t width, const std::string& col) {
    if (n > buf.size() / width) b.fail("column \"" + col + "\": a values buffer shorter than its column");
  }

  Cells column(const Field& f, const std::string& col) {
    Cells c;
    if (f.dict) {
      const Node n = b.node();
      check_length(n, col);
      c.valid = validity(b.buffer(), n, col);
      std::string_view idx = b.buffer();
      const size_t len = static_cast<size_t>(n.length);
      const int w = f.index_bits / 8;
      if (w != 1 && w != 2 && w != 4 && w != 8) b.fail("column \"" + col + "\": dictionary indices of " +
                                                        std::to_string(f.index_bits) + " bits");
      need(idx, len, static_cast<size_t>(w), col);
      auto it = dicts.find(f.dict_id);
      if (it == dicts.end()) b.fail("column \"" + col + "\": no dictionary batch with id " + std::to_string(f.dict_id));
      const Cells& d = *it->second;
      if (!d.unusable.empty()) {
        c.unusable = d.unusable;
        return c;
      }
      c.text.resize(len);
      for (size_t i = 0; i < len; ++i) {
        if (!c.valid[i]) continue;
        int64_t k = 0;
        const char* p = idx.data() + i * static_cast<size_t>(w);
        switch (w) {
          case 1: k = f.index_signed ? load_le<int8_t>(p) : load_le<uint8_t>(p); break;
          case 2: k = f.index_signed ? load_le<int16_t>(p) : load_le<uint16_t>(p); break;
          case 4: k = f.index_signed ? load_le<int32_t>(p) : static_cast<int64_t>(load_le<uint32_t>(p)); break;
          default: k = load_le<int64_t>(p); break;
        }
        if (k < 0 || static_cast<uint64_t>(k) >= d.text.size())
          b.fail("column \"" + col + "\": a dictionary index " + std::to_string(k) + " past its dictionary");
        c.valid[i] = d.valid[static_cast<size_t>(k)];
        c.text[i] = d.text[static_cast<size_t>(k)];
      }
      return c;
    }
    switch (f.type) {
      case tNull: {
        const Node n = b.node();
        check_length(n, col);
        c.text.resize(static_cast<size_t>(n.length));
        c.valid.assign(static_cast<size_t>(n.length), 0);
        return c;
      }
      case tInt: case tFloat: case tBool: case tDate: case tUtf8: case tLargeUtf8: case tBinary:
      case tLargeBinary:
        break;
      case tStruct:
        if (f.children.size() == 2 && f.children[0].name == "bytes" && f.children[1].name == "path" &&
            (f.children[0].type == tBinary || f.children[0].type == tLargeBinary) && !f.children[0].dict &&
            (f.children[1].type == tUtf8 || f.children[1].type == tLargeUtf8) && !f.children[1].dict) {
          const Node n = b.node();
          check_length(n, col);
          c.valid = validity(b.buffer(), n, col);
          Cells bytes = column(f.children[0], col + ".bytes");
          Cells path = column(f.children[1], col + ".path");
          if (bytes.valid.size() != c.valid.size() || path.valid.size() != c.valid.size())
            b.fail("column \"" + col + "\": struct children of another length than the struct");
          c.text.resize(c.valid.size());
          for (size_t i = 0; i < c.valid.size(); ++i) {
            if (!c.valid[i]) continue;
            if (bytes.valid[i]) {
              c.unusable =
                  "image bytes (the Hugging Face Image feature, struct<bytes, path>, with the images inside the "
                  "table)";
              c.text.clear();
              return c;
            }
            c.valid[i] = path.valid[i];
            c.text[i] = std::move(path.text[i]);
          }
          return c;
        }
        [[fallthrough]];
      default:
        b.skip(f);
        c.unusable = (f.children.empty() ? "" : "nested data, ") + type_name(f);
        return c;
    }
    const Node n = b.node();
    check_length(n, col);
    const size_t len = static_cast<size_t>(n.length);
    c.valid = validity(b.buffer(), n, col);
    c.text.resize(len);
    std::string_view v = b.buffer();
    if (f.type == tInt) {
      const size_t w = static_cast<size_t>(f.bits / 8);
      if (w != 1 && w != 2 && w != 4 && w != 8) b.fail("column \"" + col + "\": integers of " + std::to_string(f.bits) + " bits");
      need(v, len, w, col);
      for (size_t i = 0; i < len; ++i) {
        if (!c.valid[i]) continue;
        const char* p = v.data() + i * w;
        std::string& t = c.text[i];
        switch (w) {
          case 1: t = f.is_signed ? std::to_string(load_le<int8_t>(p)) : std::to_string(load_le<uint8_t>(p)); break;
          case 2: t = f.is_signed ? std::to_string(load_le<int16_t>(p)) : std::to_string(load_le<uint16_t>(p)); break;
          case 4: t = f.is_signed ? std::to_string(load_le<int32_t>(p)) : std::to_string(load_le<uint32_t>(p)); break;
          default: t = f.is_signed ? std::to_string(load_le<int64_t>(p)) : std::to_string(load_le<uint64_t>(p)); break;
        }
      }
      return c;
    }
    if (f.type == tFloat || f.type == tDate) {
      const size_t w = static_cast<size_t>(f.bits / 8);
      need(v, len, w, col);
      for (size_t i = 0; i < len; ++i) {
        if (!c.valid[i]) continue;
        const char* p = v.data() + i * w;
        std::string& t = c.text[i];
        if (f.type == tDate) {
          const int64_t ms = load_le<int64_t>(p);
          t = w == 4 ? table_text::date_text(load_le<int32_t>(p))
                     : table_text::date_text(ms >= 0 ? ms / 86400000 : -((-ms + 86399999) / 86400000));
        } else if (w == 2) {
          t = table_text::half_to_text(load_le<uint16_t>(p));
        } else if (w == 4) {
          t = table_text::float_text(load_le<float>(p));
        } else {
          t = table_text::double_text(load_le<double>(p));
        }
        if (t.empty()) c.valid[i] = 0;  // NaN
      }
      return c;
    }
    if (f.type == tBool) {
      need(v, (len + 7) / 8, 1, col);
      for (size_t i = 0; i < len; ++i)
        if (c.valid[i]) c.text[i] = ((static_cast<uint8_t>(v[i >> 3]) >> (i & 7)) & 1) ? "True" : "False";
      return c;
    }
    // Strings and binary: offsets then data.
    const bool large = f.type == tLargeUtf8 || f.type == tLargeBinary;
    const bool text = f.type == tUtf8 || f.type == tLargeUtf8;
    std::string_view data = b.buffer();
    const size_t ow = large ? 8 : 4;
    if (len == 0) return c;
    need(v, len + 1, ow, col);
    auto off = [&](size_t i) -> int64_t {
      return large ? load_le<int64_t>(v.data() + i * 8) : load_le<int32_t>(v.data() + i * 4);
    };
    for (size_t i = 0; i < len; ++i) {
      const int64_t s = off(i), e = off(i + 1);
      if (s < 0 || e < s || static_cast<uint64_t>(e) > data.size())
        b.fail("column \"" + col + "\": string offsets outside its data (" + std::to_string(s) + ".." +
               std::to_string(e) + " of " + std::to_string(data.size()) + " bytes)");
      if (!c.valid[i]) continue;
      std::string_view cell = data.substr(static_cast<size_t>(s), static_cast<size_t>(e - s));
      const size_t bad = std::min(invalid_utf8_at(cell), cell.find('\0'));
      if (bad != std::string_view::npos) {
        if (!text) {
          c.unusable = "binary data (" + type_name(f) + ")";
          c.text.clear();
          // the remaining offsets are not checked: the column is not read
          return c;
        }
        c.text[i] = std::to_string(bad);  // reported with its row by the caller
        c.valid[i] = 2;
        continue;
      }
      if (text && cell.size() > (size_t{16} << 20))
        b.fail("column \"" + col + "\": a string of " + std::to_string(cell.size()) +
               " bytes, more than a cell may hold (16 MiB)");
      c.text[i] = std::string(cell);
    }
    return c;
  }
};

struct Stream {
  const std::string& name;  // the shard, for messages
  CsvTable& into;
  const TableLimits& limits;
  std::vector<Field> fields;
  bool have_schema = false;
  std::map<int64_t, std::shared_ptr<Cells>> dicts;
  std::vector<std::string> unusable;  // per column, across batches

  Stream(const std::string& n, CsvTable& t, const TableLimits& l) : name(n), into(t), limits(l) {}

  [[noreturn]] void fail(const std::string& why) const { throw DataError(name + ": " + why); }

  // Reads a RecordBatch table's nodes and buffers over `body`.
  void read_batch(const FbTable& rb, std::string_view body, Batch& b, int64_t& length) {
    length = rb.scalar<int64_t>(0, 0);
    if (length < 0) fail("a record batch of negative length");
    auto [nn, nat] = rb.vec(1, 16);
    for (size_t i = 0; i < nn; ++i)
      b.nodes.push_back({rb.fb->get<int64_t>(nat + 16 * i), rb.fb->get<int64_t>(nat + 16 * i + 8)});
    auto [nb, bat] = rb.vec(2, 16);
    int codec = -1;
    if (rb.has(3)) codec = rb.table(3).scalar<int8_t>(0, 0);
    if (codec == 0)
      fail("its record batches are compressed with LZ4_FRAME, which kgtrain does not read (write it without "
           "compression, as `datasets` does, or with compression='zstd')");
    for (size_t i = 0; i < nb; ++i) {
      const int64_t off = rb.fb->get<int64_t>(bat + 16 * i), len = rb.fb->get<int64_t>(bat + 16 * i + 8);
      if (off < 0 || len < 0 || static_cast<uint64_t>(off) > body.size() ||
          static_cast<uint64_t>(len) > body.size() - static_cast<uint64_t>(off))
        fail("a buffer outside its message body (" + std::to_string(off) + "+" + std::to_string(len) + " of " +
             std::to_string(body.size()) + " bytes; a truncated file?)");
      std::string_view buf = body.substr(static_cast<size_t>(off), static_cast<size_t>(len));
      if (codec == 1 && !buf.empty()) {
        if (buf.size() < 8) fail("a compressed buffer without its length");
        const int64_t raw = load_le<int64_t>(buf.data());
        if (raw == -1) {
          buf.remove_prefix(8);
        } else {
          if (raw < 0) fail("a compressed buffer of negative length");
          b.owned.push_back(zstd_decompress(buf.substr(8), static_cast<size_t>(raw), limits.max_block_bytes,
                                            name + " buffer"));
          buf = b.owned.back();
        }
      }
      b.buffers.push_back(buf);
    }
  }

  void schema(const FbTable& s) {
    if (have_schema) fail("a second schema message");
    have_schema = true;
    auto [n, at] = s.vec(1, 4);
    for (size_t i = 0; i < n; ++i) fields.push_back(read_field(s.table_in_vector(at + 4 * i), 0));
    std::vector<std::string> header;
    for (const Field& f : fields) {
      const std::string h = kg::trim(f.name);
      for (const auto& x : header) KG_CHECK(x != h, DataError, name, ": duplicate column \"", h, "\"");
      header.push_back(h);
    }
    if (into.header.empty() && into.rows.empty()) {
      into.header = header;
    } else {
      KG_CHECK(into.header == header, DataError, name, ": its columns differ from the first shard's");
    }
    unusable.assign(fields.size(), "");
    for (const auto& [c, why] : into.unusable) unusable[static_cast<size_t>(c)] = why;
  }

  void dictionary(const FbTable& d, std::string_view body) {
    const int64_t id = d.scalar<int64_t>(0, 0);
    if (d.scalar<uint8_t>(2, 0)) fail("a delta dictionary batch, which kgtrain does not read");
    const Field* f = nullptr;
    auto find = [&](auto&& self, const std::vector<Field>& fs) -> void {
      for (const Field& x : fs) {
        if (x.dict && x.dict_id == id) f = &x;
        self(self, x.children);
      }
    };
    find(find, fields);
    if (!f) fail("a dictionary batch for no column (id " + std::to_string(id) + ")");
    Batch b(name, limits);
    int64_t length = 0;
    read_batch(d.table(1), body, b, length);
    Field values = *f;
    values.dict = false;
    Decoder dec{b, dicts};
    auto cells = std::make_shared<Cells>(dec.column(values, f->name));
    dicts[id] = cells;
  }

  void record_batch(const FbTable& rb, std::string_view body) {
    if (!have_schema) fail("a record batch before the schema");
    Batch b(name, limits);
    int64_t length = 0;
    read_batch(rb, body, b, length);
    const size_t ncols = fields.size();
    const size_t len = static_cast<size_t>(length);
    const size_t width = std::max<size_t>(1, ncols);  // a row costs a vector even without columns
    if (len > limits.max_cells / width || into.rows.size() > limits.max_cells / width - len)
      fail("more than " + std::to_string(limits.max_cells) + " cells (rows x columns; a damaged or hostile file?)");
    const size_t base = into.rows.size();
    std::vector<Cells> cols;
    Decoder dec{b, dicts};
    for (size_t c = 0; c < ncols; ++c) {
      cols.push_back(dec.column(fields[c], into.header[c]));
      if (cols.back().unusable.empty() && cols.back().valid.size() != len)
        fail("column \"" + into.header[c] + "\" has " + std::to_string(cols.back().valid.size()) +
             " values in a record batch of " + std::to_string(len) + " rows");
    }
    into.rows.resize(base + len, std::vector<std::string>(ncols));
    for (size_t c = 0; c < ncols; ++c) {
      Cells& col = cols[c];
      if (!col.unusable.empty() && unusable[c].empty()) {
        unusable[c] = col.unusable;
        for (size_t r = 0; r < base; ++r) into.rows[r][c].clear();
      }
      if (!unusable[c].empty()) continue;
      for (size_t r = 0; r < len; ++r) {
        if (col.valid[r] == 2) {
          const std::string& t = col.text[r];
          throw DataError(into.where(base + r + 1) + ", column \"" + into.header[c] + "\": byte " +
                          std::to_string(std::stoull(t) + 1) +
                          " is not valid UTF-8 or is a NUL (a string column must hold UTF-8 text)");
        }
        if (col.valid[r]) into.rows[base + r][c] = std::move(col.text[r]);
      }
    }
  }

  void run(std::string_view bytes) {
    size_t pos = 0;
    if (bytes.substr(0, 6) == "ARROW1") pos = std::min<size_t>(8, bytes.size());  // the IPC file format
    const auto* base = reinterpret_cast<const uint8_t*>(bytes.data());
    for (;;) {
      if (bytes.size() - pos < 4) {
        if (have_schema) return;  // a stream without its end marker: what it holds is read
        fail("not an Arrow IPC stream (too short for its first message)");
      }
      uint32_t len = load_le<uint32_t>(bytes.data() + pos);
      pos += 4;
      if (len == 0xFFFFFFFFu) {
        if (bytes.size() - pos < 4) fail("truncated after a continuation marker");
        len = load_le<uint32_t>(bytes.data() + pos);
        pos += 4;
      } else if (!have_schema) {
        fail("not an Arrow IPC stream (no continuation marker 0xFFFFFFFF at its start; a Feather v1, Parquet "
             "or other file?)");
      }
      if (len == 0) return;  // end of stream
      if (len > bytes.size() - pos) fail("a message header longer than the file (truncated file?)");
      Fb fb{base + pos, len, name};
      pos += len;
      const FbTable msg = FbTable::at(fb, fb.get<uint32_t>(0));
      const uint8_t kind = msg.scalar<uint8_t>(1, 0);
      const int64_t body_len = msg.scalar<int64_t>(3, 0);
      if (body_len < 0 || static_cast<uint64_t>(body_len) > bytes.size() - pos)
        fail("a message body of " + std::to_string(body_len) + " bytes past the end of the file (truncated file?)");
      std::string_view body = bytes.substr(pos, static_cast<size_t>(body_len));
      pos += static_cast<size_t>(body_len);
      switch (kind) {
        case 1: schema(msg.table(2)); break;
        case 2: dictionary(msg.table(2), body); break;
        case 3: record_batch(msg.table(2), body); break;
        default: fail("a message of type " + std::to_string(kind) + " (tensors are not tables)");
      }
    }
  }
};

}  // namespace aipc

void parse_arrow_ipc(std::string_view bytes, const std::string& shard, CsvTable& into, const TableLimits& limits) {
  aipc::Stream s(shard, into, limits);
  s.run(bytes);
  for (size_t c = 0; c < s.unusable.size(); ++c)
    if (!s.unusable[c].empty()) into.unusable[static_cast<int>(c)] = s.unusable[c];
}

}  // namespace kg::data
