// The packed dataset: a whole table's images in ONE memory-mapped file, so a run reads one file
// instead of thousands of small ones (the idea of Caffe's convert_imageset and FFCV's .beton).
//
// Layout (little-endian; offsets are from the start of the file):
//   [0, 128)         header: magic "KGPACK01", version, flags, item count, offset and size of the
//                    item, index and metadata sections, the file size, the content hash
//   [128, ...)       item bytes, each item starting on a 64-byte boundary (zero padding between)
//   index            per item: uint64 offset, uint64 size (16 bytes per item)
//   metadata         UTF-8 JSON: kind ("encoded" | "raw"), height/width/channels (raw), table_csv,
//                    id_col, source, created_by, ... (anything else the writer puts there)
// Content hash: XXH64 (seed 0) of every byte after the header, i.e. `tail -c +129 f | xxhsum -H64`.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>
#include "core/xxh64.h"
#include "data/image.h"
#include "data/image_header.h"

namespace kg::data {

inline constexpr char kPackMagic[8] = {'K', 'G', 'P', 'A', 'C', 'K', '0', '1'};
inline constexpr uint32_t kPackVersion = 1;
inline constexpr uint64_t kPackHeaderSize = 128;
inline constexpr uint64_t kPackAlign = 64;

enum class PackKind { encoded, raw };

struct RawGeometry {
  int64_t height = 0, width = 0, channels = 0;
  int64_t bytes() const { return height * width * channels; }
};

// Streams items into "<path>.tmp-<pid>-<n>" and publishes the pack at `path` in finish() (fsync +
// rename): nothing half-written is ever at `path`. A writer destroyed without finish() removes its
// temp file. Items are written as they are added; only the index (16 bytes/item) stays in memory.
class PackWriter {
 public:
  // `meta` must hold kind ("encoded" or "raw"; raw needs positive integer height, width and
  // channels 1 or 3), table_csv and id_col (strings); source and created_by are strings when present.
  // DataError when the metadata is incomplete or the temp file cannot be created.
  PackWriter(std::string path, nlohmann::json meta);
  ~PackWriter();
  PackWriter(const PackWriter&) = delete;
  PackWriter& operator=(const PackWriter&) = delete;

  // Appends one item: an encoded image file's bytes, or raw height*width*channels uint8 pixels in
  // RGB (or gray) order. DataError on a raw item of the wrong size or a write failure.
  void add(std::string_view bytes);
  int64_t size() const { return static_cast<int64_t>(index_.size() / 2); }

  // Writes index, metadata and header, fsyncs and renames onto `path`. Returns the content hash (hex).
  std::string finish();

 private:
  void append(std::string_view bytes);  // buffered; hashed
  void flush();
  void abandon() noexcept;

  std::string path_, tmp_;
  std::string meta_text_;  // the metadata as written (checked in the constructor)
  RawGeometry raw_;        // zeros for encoded packs
  int fd_ = -1;
  uint64_t pos_ = 0;             // file offset of the next appended byte
  std::string buf_;              // appended bytes not yet written
  std::vector<uint64_t> index_;  // offset, size per item
  Xxh64 hash_;                   // over everything after the header, as appended
  bool finished_ = false;
};

// A pack opened read-only through mmap. Everything is checked against the file size in open(), so
// item(i) never reads outside the mapping. Safe for concurrent use from any number of threads.
class PackReader {
 public:
  // DataError naming the file and the problem (missing, truncated, bad magic or version, sections
  // or items outside the file, metadata that is not JSON or lacks keys, raw items of the wrong size,
  // a table_csv whose data-row count differs from the item count).
  static std::shared_ptr<const PackReader> open(const std::string& path);
  ~PackReader();
  PackReader(const PackReader&) = delete;
  PackReader& operator=(const PackReader&) = delete;

  const std::string& path() const { return path_; }
  int64_t size() const { return count_; }
  // The item's bytes, inside the mapping (valid as long as the reader lives). DataError when out of range.
  std::string_view item(int64_t i) const;
  // The item as an 8-bit image with exactly `channels` (1 gray or 3 RGB) channels, owning its pixels.
  // Encoded items are decoded (data::decode_image_bytes, named "<file>#<i>"); raw items are copied
  // and converted (RGB -> gray by OpenCV's BT.601 weights, gray -> RGB by replication).
  Image image(int64_t i, int channels, int64_t max_pixels = kDefaultMaxImagePixels) const;

  const nlohmann::json& meta() const { return meta_; }
  PackKind kind() const { return kind_; }
  RawGeometry raw_geometry() const { return raw_; }  // zeros for encoded packs
  const std::string& table_csv() const { return table_csv_; }
  const std::string& id_col() const { return id_col_; }
  // The stored content hash, 16 lower-case hex digits.
  std::string hash() const;
  // Recomputes the content hash over the mapped bytes; DataError when it differs (damaged file).
  void verify() const;

 private:
  PackReader() = default;
  std::string name() const;  // file name for messages

  std::string path_;
  const unsigned char* base_ = nullptr;
  uint64_t file_size_ = 0;
  int64_t count_ = 0;
  const unsigned char* index_ = nullptr;  // 16 bytes per item, validated
  uint64_t stored_hash_ = 0;
  nlohmann::json meta_;
  PackKind kind_ = PackKind::encoded;
  RawGeometry raw_;
  std::string table_csv_, id_col_;
};

}  // namespace kg::data
