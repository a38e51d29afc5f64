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
#include "data/arrow_format.h"
#include "data/table_read.h"

namespace kg::data {
namespace aipc {

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
      fail(
          "its record batches are compressed with LZ4_FRAME, which kgtrain does not read (write it without "
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
          b.owned.push_back(
              zstd_decompress(buf.substr(8), static_cast<size_t>(raw), limits.max_block_bytes, name + " buffer"));
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
    auto cells = std::make_shared<Cells>(decode_column(b, dicts, values, f->name));
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
    for (size_t c = 0; c < ncols; ++c) {
      cols.push_back(decode_column(b, dicts, fields[c], into.header[c]));
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
        fail(
            "not an Arrow IPC stream (no continuation marker 0xFFFFFFFF at its start; a Feather v1, Parquet "
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
        case 1:
          schema(msg.table(2));
          break;
        case 2:
          dictionary(msg.table(2), body);
          break;
        case 3:
          record_batch(msg.table(2), body);
          break;
        default:
          fail("a message of type " + std::to_string(kind) + " (tensors are not tables)");
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
