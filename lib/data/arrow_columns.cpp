// Arrow IPC columns (data/arrow_format.h): the schema's fields, and each column of a record batch as text cells:
// integers, floats, booleans, dates, strings and binary (32- and 64-bit offsets), dictionary-encoded columns, null
// columns and the Image feature's struct<bytes, path>; the buffers of any other type skipped.
#include <algorithm>

#include "core/strings.h"
#include "data/arrow_format.h"

namespace kg::data::aipc {

std::string type_name(const Field& f) {
  static const char* n[] = {"none",
                            "null",
                            "int",
                            "float",
                            "binary",
                            "string",
                            "bool",
                            "decimal",
                            "date",
                            "time",
                            "timestamp",
                            "interval",
                            "list",
                            "struct",
                            "union",
                            "fixed_size_binary",
                            "fixed_size_list",
                            "map",
                            "duration",
                            "large_binary",
                            "large_string",
                            "large_list",
                            "run_end_encoded",
                            "binary_view",
                            "string_view",
                            "list_view",
                            "large_list_view"};
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

  bool image_struct(const Field& f) const {
    return f.children.size() == 2 && f.children[0].name == "bytes" && f.children[1].name == "path" &&
           (f.children[0].type == tBinary || f.children[0].type == tLargeBinary) && !f.children[0].dict &&
           (f.children[1].type == tUtf8 || f.children[1].type == tLargeUtf8) && !f.children[1].dict;
  }

  Cells dictionary_column(const Field& f, const std::string& col) {
    Cells c;
    const Node n = b.node();
    check_length(n, col);
    c.valid = validity(b.buffer(), n, col);
    std::string_view idx = b.buffer();
    const size_t len = static_cast<size_t>(n.length);
    const int w = f.index_bits / 8;
    if (w != 1 && w != 2 && w != 4 && w != 8)
      b.fail("column \"" + col + "\": dictionary indices of " + std::to_string(f.index_bits) + " bits");
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
        case 1:
          k = f.index_signed ? load_le<int8_t>(p) : load_le<uint8_t>(p);
          break;
        case 2:
          k = f.index_signed ? load_le<int16_t>(p) : load_le<uint16_t>(p);
          break;
        case 4:
          k = f.index_signed ? load_le<int32_t>(p) : static_cast<int64_t>(load_le<uint32_t>(p));
          break;
        default:
          k = load_le<int64_t>(p);
          break;
      }
      if (k < 0 || static_cast<uint64_t>(k) >= d.text.size())
        b.fail("column \"" + col + "\": a dictionary index " + std::to_string(k) + " past its dictionary");
      c.valid[i] = d.valid[static_cast<size_t>(k)];
      c.text[i] = d.text[static_cast<size_t>(k)];
    }
    return c;
  }

  // The Image struct: its paths, or unusable when a row holds image bytes.
  Cells image_column(const Field& f, const std::string& col) {
    Cells c;
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
        c.unusable = table_text::in_table_images();
        c.text.clear();
        return c;
      }
      c.valid[i] = path.valid[i];
      c.text[i] = std::move(path.text[i]);
    }
    return c;
  }

  void integers(const Field& f, const std::string& col, std::string_view v, size_t len, Cells& c) {
    const size_t w = static_cast<size_t>(f.bits / 8);
    if (w != 1 && w != 2 && w != 4 && w != 8)
      b.fail("column \"" + col + "\": integers of " + std::to_string(f.bits) + " bits");
    need(v, len, w, col);
    for (size_t i = 0; i < len; ++i) {
      if (!c.valid[i]) continue;
      const char* p = v.data() + i * w;
      std::string& t = c.text[i];
      switch (w) {
        case 1:
          t = f.is_signed ? std::to_string(load_le<int8_t>(p)) : std::to_string(load_le<uint8_t>(p));
          break;
        case 2:
          t = f.is_signed ? std::to_string(load_le<int16_t>(p)) : std::to_string(load_le<uint16_t>(p));
          break;
        case 4:
          t = f.is_signed ? std::to_string(load_le<int32_t>(p)) : std::to_string(load_le<uint32_t>(p));
          break;
        default:
          t = f.is_signed ? std::to_string(load_le<int64_t>(p)) : std::to_string(load_le<uint64_t>(p));
          break;
      }
    }
    return;
  }

  void floats_or_dates(const Field& f, const std::string& col, std::string_view v, size_t len, Cells& c) {
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
    return;
  }

  void strings(const Field& f, const std::string& col, std::string_view v, size_t len, Cells& c) {
    // Strings and binary: offsets then data.
    const bool large = f.type == tLargeUtf8 || f.type == tLargeBinary;
    const bool text = f.type == tUtf8 || f.type == tLargeUtf8;
    std::string_view data = b.buffer();
    const size_t ow = large ? 8 : 4;
    if (len == 0) return;
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
          return;
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
  }

  Cells column(const Field& f, const std::string& col) {
    if (f.dict) return dictionary_column(f, col);
    Cells c;
    switch (f.type) {
      case tNull: {
        const Node n = b.node();
        check_length(n, col);
        c.text.resize(static_cast<size_t>(n.length));
        c.valid.assign(static_cast<size_t>(n.length), 0);
        return c;
      }
      case tInt:
      case tFloat:
      case tBool:
      case tDate:
      case tUtf8:
      case tLargeUtf8:
      case tBinary:
      case tLargeBinary:
        break;
      case tStruct:
        if (image_struct(f)) return image_column(f, col);
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
      integers(f, col, v, len, c);
    } else if (f.type == tFloat || f.type == tDate) {
      floats_or_dates(f, col, v, len, c);
    } else if (f.type == tBool) {
      need(v, (len + 7) / 8, 1, col);
      for (size_t i = 0; i < len; ++i)
        if (c.valid[i]) c.text[i] = ((static_cast<uint8_t>(v[i >> 3]) >> (i & 7)) & 1) ? "True" : "False";
    } else {
      strings(f, col, v, len, c);
    }
    return c;
  }
};

Cells decode_column(Batch& b, const std::map<int64_t, std::shared_ptr<Cells>>& dicts, const Field& f,
                    const std::string& col) {
  Decoder d{b, dicts};
  return d.column(f, col);
}

}  // namespace kg::data::aipc
