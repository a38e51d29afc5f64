// Parquet pages (data/parquet_format.h): a leaf column's chunk in one row group, page by page: dictionary pages,
// data pages v1 and v2, PLAIN and dictionary values, the RLE/bit-packed hybrid for definition levels and
// booleans, decompressed with data/table_codecs.h; each value as the text a CSV would hold.
#include <algorithm>
#include <cstring>

#include "core/strings.h"
#include "data/parquet_format.h"
#include "data/table_codecs.h"

namespace kg::data::pq {
using table_text::date_text;
using table_text::decimal_text;
using table_text::double_text;
using table_text::float_text;
using table_text::half_to_text;

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
      if (groups == 0 || bytes > static_cast<uint64_t>(end - p)) throw DataError(what + ": truncated bit-packed run");
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
      case 1:
        return snappy_decompress(in, n, r.limits.max_block_bytes, w);
      case 2:
        return gzip_decompress(in, n, r.limits.max_block_bytes, w);
      case 6:
        return zstd_decompress(in, n, r.limits.max_block_bytes, w);
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
      case kInt32:
      case kFloat:
        width = 4;
        break;
      case kInt64:
      case kDoubleT:
        width = 8;
        break;
      case kInt96:
        width = 12;
        break;
      case kFixed:
        if (leaf.elem.type_length <= 0 || leaf.elem.type_length > (int64_t{1} << 24))
          fail("a FIXED_LEN_BYTE_ARRAY of length " + std::to_string(leaf.elem.type_length));
        width = static_cast<size_t>(leaf.elem.type_length);
        break;
      default:
        fail(std::string("values of ") + phys_name(t));
    }
    if (n > static_cast<size_t>(end - p) / width) need(SIZE_MAX);
    for (size_t i = 0; i < n; ++i, p += width) {
      if (discard) {
        to.emplace_back();
        continue;
      }
      switch (leaf.kind) {
        case Kind::i32:
          to.push_back(std::to_string(load<int32_t>(p)));
          break;
        case Kind::u32:
          to.push_back(std::to_string(load<uint32_t>(p)));
          break;
        case Kind::i64:
          to.push_back(std::to_string(load<int64_t>(p)));
          break;
        case Kind::u64:
          to.push_back(std::to_string(load<uint64_t>(p)));
          break;
        case Kind::date:
          to.push_back(date_text(load<int32_t>(p)));
          break;
        case Kind::decimal32:
          to.push_back(decimal_text(load<int32_t>(p), leaf.elem.scale));
          break;
        case Kind::decimal64:
          to.push_back(decimal_text(load<int64_t>(p), leaf.elem.scale));
          break;
        case Kind::float32:
          to.push_back(float_text(load<float>(p)));
          break;
        case Kind::float64:
          to.push_back(double_text(load<double>(p)));
          break;
        case Kind::float16:
          to.push_back(half_to_text(load<uint16_t>(p)));
          break;
        case Kind::binary:
        case Kind::text:
          to.push_back(value_text(std::string_view(reinterpret_cast<const char*>(p), width)));
          break;
        default:
          to.emplace_back();
          break;
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
    static const char* names[] = {
        "PLAIN",          "GROUP_VAR_INT",       "PLAIN_DICTIONARY",        "RLE",
        "BIT_PACKED",     "DELTA_BINARY_PACKED", "DELTA_LENGTH_BYTE_ARRAY", "DELTA_BYTE_ARRAY",
        "RLE_DICTIONARY", "BYTE_STREAM_SPLIT"};
    fail(std::string("values encoded as ") +
         (encoding >= 0 && encoding < 10 ? names[encoding] : "an unknown encoding") +
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
      if (p >= end)
        fail("its pages end after " + std::to_string(out.present.size()) + " of " + std::to_string(rows) +
             " rows of a row group (truncated or damaged file)");
      const std::string w = what() + " page header";
      Thrift t{p, end, w};
      const PageHeader h = read_page_header(t);
      p = t.p;
      if (h.compressed < 0 || h.compressed > end - p) fail("a page longer than its column chunk (truncated file?)");
      std::string_view body(reinterpret_cast<const char*>(p), static_cast<size_t>(h.compressed));
      p += h.compressed;
      if (h.type == 2 && discard) continue;  // levels only: the dictionary is not needed
      if (h.type == 2) {                     // dictionary page
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
        if (discard)
          out.values.resize(out.values.size() + non_null);
        else
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
        if (discard) {  // levels only: the values (an image's bytes) are not even decompressed
          out.values.resize(out.values.size() + non_null);
          continue;
        }
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

Decoded read_column_chunk(std::string_view file, const Leaf& leaf, const ChunkMeta& chunk, int64_t rows, bool discard,
                          const std::string& file_name, const std::string& column, const TableLimits& limits) {
  const Reader rd{file_name, limits};
  ChunkReader cr{rd, file, leaf, column, chunk.codec, {}, false, discard, {}};
  cr.read(chunk, rows);
  return std::move(cr.out);
}

}  // namespace kg::data::pq
