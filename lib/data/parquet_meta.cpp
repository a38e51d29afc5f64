// Parquet's footer and page headers (data/parquet_format.h): FileMetaData, SchemaElement, ColumnChunk and
// PageHeader read field by field in Thrift's compact protocol, unknown fields skipped; the column types.
#include "data/parquet_format.h"

namespace kg::data::pq {

const char* phys_name(int t) {
  static const char* n[] = {"BOOLEAN", "INT32",  "INT64",      "INT96",
                            "FLOAT",   "DOUBLE", "BYTE_ARRAY", "FIXED_LEN_BYTE_ARRAY"};
  return t >= 0 && t < 8 ? n[t] : "an unknown physical type";
}

SchemaElem read_schema_elem(Thrift& t) {
  SchemaElem e;
  t.fields([&](int64_t id, uint8_t ty) {
    switch (id) {
      case 1:
        e.type = static_cast<int>(t.integer(ty));
        return true;
      case 2:
        e.type_length = t.integer(ty);
        return true;
      case 3:
        e.repetition = static_cast<int>(t.integer(ty));
        return true;
      case 4:
        e.name = std::string(t.binary(ty));
        return true;
      case 5:
        e.num_children = t.integer(ty);
        return true;
      case 6:
        e.converted = static_cast<int>(t.integer(ty));
        return true;
      case 7:
        e.scale = t.integer(ty);
        return true;
      case 8:
        e.precision = t.integer(ty);
        return true;
      case 10:
        if (ty != kStruct) return false;
        t.fields([&](int64_t lid, uint8_t lty) {
          e.logical = static_cast<int>(lid);
          if (lid == 10 && lty == kStruct) {  // IntType
            t.fields([&](int64_t iid, uint8_t ity) {
              if (iid == 1)
                e.int_bits = static_cast<int>(t.integer(ity));
              else if (iid == 2)
                e.int_signed = t.integer(ity) != 0;
              else
                return false;
              return true;
            });
            return true;
          }
          if (lid == 5 && lty == kStruct) {  // DecimalType
            t.fields([&](int64_t did, uint8_t dty) {
              if (did == 1)
                e.scale = t.integer(dty);
              else if (did == 2)
                e.precision = t.integer(dty);
              else
                return false;
              return true;
            });
            return true;
          }
          return false;
        });
        return true;
      default:
        return false;
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
        case 1:
          c.type = static_cast<int>(t.integer(mty));
          return true;
        case 3:
          t.list(mty, [&](uint8_t et) { c.path.emplace_back(t.binary(et)); });
          return true;
        case 4:
          c.codec = static_cast<int>(t.integer(mty));
          return true;
        case 5:
          c.num_values = t.integer(mty);
          return true;
        case 7:
          c.total_compressed_size = t.integer(mty);
          return true;
        case 9:
          c.data_page_offset = t.integer(mty);
          return true;
        case 11:
          c.dictionary_page_offset = t.integer(mty);
          return true;
        default:
          return false;
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
      case 3:
        m.num_rows = t.integer(ty);
        return true;
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
      default:
        return false;
    }
  });
  return m;
}

PageHeader read_page_header(Thrift& t) {
  PageHeader h;
  t.fields([&](int64_t id, uint8_t ty) {
    switch (id) {
      case 1:
        h.type = static_cast<int>(t.integer(ty));
        return true;
      case 2:
        h.uncompressed = t.integer(ty);
        return true;
      case 3:
        h.compressed = t.integer(ty);
        return true;
      case 5:  // DataPageHeader
      case 7:  // DictionaryPageHeader
        if (ty != kStruct) return false;
        t.fields([&](int64_t did, uint8_t dty) {
          if (did == 1)
            h.num_values = t.integer(dty);
          else if (did == 2)
            h.encoding = static_cast<int>(t.integer(dty));
          else
            return false;
          return true;
        });
        return true;
      case 8:  // DataPageHeaderV2
        if (ty != kStruct) return false;
        t.fields([&](int64_t did, uint8_t dty) {
          switch (did) {
            case 1:
              h.num_values = t.integer(dty);
              return true;
            case 2:
              h.num_nulls = t.integer(dty);
              return true;
            case 4:
              h.encoding = static_cast<int>(t.integer(dty));
              return true;
            case 5:
              h.def_len = t.integer(dty);
              return true;
            case 6:
              h.rep_len = t.integer(dty);
              return true;
            case 7:
              h.v2_compressed = t.integer(dty) != 0;
              return true;
            default:
              return false;
          }
        });
        return true;
      default:
        return false;
    }
  });
  return h;
}

std::string logical_text(const SchemaElem& e) {
  switch (e.logical) {
    case 1:
      return "string";
    case 2:
      return "map";
    case 3:
      return "list";
    case 4:
      return "enum";
    case 5:
      return "decimal(" + std::to_string(e.precision) + "," + std::to_string(e.scale) + ")";
    case 6:
      return "date";
    case 7:
      return "time";
    case 8:
      return "timestamp";
    case 10:
      return std::string(e.int_signed ? "int" : "uint") + std::to_string(e.int_bits);
    case 12:
      return "json";
    case 13:
      return "bson";
    case 14:
      return "uuid";
    case 15:
      return "float16";
    default:
      break;
  }
  switch (e.converted) {
    case 0:
      return "string";
    case 5:
      return "decimal(" + std::to_string(e.precision) + "," + std::to_string(e.scale) + ")";
    case 6:
      return "date";
    case 7:
    case 8:
      return "time";
    case 9:
    case 10:
      return "timestamp";
    default:
      return "";
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
    case kBoolean:
      l.kind = Kind::boolean;
      return;
    case kInt32:
      l.kind = is_decimal ? Kind::decimal32 : is_date ? Kind::date : is_unsigned ? Kind::u32 : Kind::i32;
      return;
    case kInt64:
      l.kind = is_decimal ? Kind::decimal64 : is_unsigned ? Kind::u64 : Kind::i64;
      return;
    case kFloat:
      l.kind = Kind::float32;
      return;
    case kDoubleT:
      l.kind = Kind::float64;
      return;
    case kByteArray:
      if (is_decimal) return;
      l.kind = (e.logical == 1 || e.logical == 4 || e.logical == 12 || e.converted == 0 || e.converted == 4 ||
                e.converted == 19)
                   ? Kind::text
                   : Kind::binary;
      return;
    case kFixed:
      if (e.logical == 15 && e.type_length == 2)
        l.kind = Kind::float16;
      else if (!is_decimal && e.logical != 14)
        l.kind = Kind::binary;
      return;
    default:
      return;  // INT96 (legacy timestamps) and anything unknown
  }
}

}  // namespace kg::data::pq
