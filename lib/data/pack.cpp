#include "data/pack.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <filesystem>

#if KG_WITH_OPENCV
#include <opencv2/imgproc.hpp>
#endif

#include "core/error.h"
#include "core/fs.h"
#include "core/xxh64.h"
#include "data/csv.h"
#include "data/image_io.h"

namespace kg::data {
namespace {

using json = nlohmann::json;

constexpr const char* kRedo = "; the pack is truncated or damaged — re-run kgtrain pack";
constexpr uint64_t kIndexEntry = 16;

// Header field offsets (see pack.h).
enum : size_t {
  kOffVersion = 8,
  kOffFlags = 12,
  kOffCount = 16,
  kOffItems = 24,
  kOffItemsSize = 32,
  kOffIndex = 40,
  kOffIndexSize = 48,
  kOffMeta = 56,
  kOffMetaSize = 64,
  kOffFileSize = 72,
  kOffHash = 80,
};

uint64_t load_le64(const unsigned char* p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}
uint32_t load_le32(const unsigned char* p) {
  uint32_t v = 0;
  for (int i = 3; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}
void store_le64(unsigned char* p, uint64_t v) {
  for (int i = 0; i < 8; ++i) p[i] = static_cast<unsigned char>(v >> (8 * i));
}
void store_le32(unsigned char* p, uint32_t v) {
  for (int i = 0; i < 4; ++i) p[i] = static_cast<unsigned char>(v >> (8 * i));
}

std::string hex64(uint64_t v) {
  static const char* d = "0123456789abcdef";
  std::string s(16, '0');
  for (int i = 15; i >= 0; --i, v >>= 4) s[static_cast<size_t>(i)] = d[v & 15];
  return s;
}

std::string os_reason() { return std::strerror(errno); }

// "" when `m` is usable pack metadata (filling kind and raw), else what is wrong with it.
std::string meta_problem(const json& m, PackKind& kind, RawGeometry& raw) {
  if (!m.is_object()) return "the metadata is not a JSON object";
  auto k = m.find("kind");
  if (k == m.end() || !k->is_string()) return "the metadata has no \"kind\" string (\"encoded\" or \"raw\")";
  if (*k == "encoded") {
    kind = PackKind::encoded;
    raw = {};
  } else if (*k == "raw") {
    kind = PackKind::raw;
    auto dim = [&](const char* key, int64_t& out) -> std::string {
      auto v = m.find(key);
      if (v == m.end() || !v->is_number_integer() || v->get<int64_t>() <= 0 || v->get<int64_t>() > (1 << 20))
        return std::string("a raw pack's metadata needs \"") + key + "\" as a positive integer";
      out = v->get<int64_t>();
      return "";
    };
    for (auto [key, out] : {std::pair{"height", &raw.height}, {"width", &raw.width}, {"channels", &raw.channels}})
      if (auto e = dim(key, *out); !e.empty()) return e;
    if (raw.channels != 1 && raw.channels != 3)
      return "a raw pack's \"channels\" must be 1 or 3, got " + std::to_string(raw.channels);
  } else {
    return "the metadata's \"kind\" is " + k->dump() + ", expected \"encoded\" or \"raw\"";
  }
  for (const char* key : {"table_csv", "id_col"}) {
    auto v = m.find(key);
    if (v == m.end() || !v->is_string()) return std::string("the metadata has no \"") + key + "\" string";
  }
  for (const char* key : {"source", "created_by"}) {
    auto v = m.find(key);
    if (v != m.end() && !v->is_string()) return std::string("the metadata's \"") + key + "\" is not a string";
  }
  return "";
}

}  // namespace

// ---- writer ----------------------------------------------------------------------------------------

PackWriter::PackWriter(std::string path, json meta) : path_(std::move(path)) {
  PackKind kind;
  if (auto e = meta_problem(meta, kind, raw_); !e.empty()) throw DataError("cannot write " + path_ + ": " + e);
  try {
    meta_text_ = meta.dump();
  } catch (const json::exception& e) {
    throw DataError("cannot write " + path_ + ": the metadata cannot be written as JSON: " + e.what());
  }
  namespace stdfs = std::filesystem;
  std::error_code ec;
  auto dir = stdfs::path(path_).parent_path();
  if (!dir.empty()) stdfs::create_directories(dir, ec);
  if (ec) throw DataError("cannot create directory " + dir.string() + ": " + ec.message());
  static std::atomic<uint64_t> counter{0};
  tmp_ = path_ + ".tmp-" + std::to_string(::getpid()) + "-" + std::to_string(counter.fetch_add(1));
  fd_ = ::open(tmp_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
  if (fd_ < 0) throw DataError("cannot create " + tmp_ + ": " + os_reason());
  // The header is written last, at offset 0, once the sections are known; until then it is zeros
  // (and the file is not at `path` anyway).
  buf_.assign(kPackHeaderSize, '\0');
  pos_ = kPackHeaderSize;
}

PackWriter::~PackWriter() { abandon(); }

void PackWriter::abandon() noexcept {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
  if (!finished_ && !tmp_.empty()) ::unlink(tmp_.c_str());
}

void PackWriter::flush() {
  const char* p = buf_.data();
  size_t left = buf_.size();
  while (left > 0) {
    ssize_t n = ::write(fd_, p, left);
    if (n < 0) {
      if (errno == EINTR) continue;
      throw DataError("cannot write " + tmp_ + ": " + os_reason());
    }
    p += n;
    left -= static_cast<size_t>(n);
  }
  buf_.clear();
}

void PackWriter::append(std::string_view bytes) {
  hash_.update(bytes);
  pos_ += bytes.size();
  if (buf_.size() + bytes.size() > (1u << 20)) flush();
  if (bytes.size() >= (1u << 20)) {
    buf_.assign(bytes);  // large items go straight through
    flush();
  } else {
    buf_.append(bytes);
  }
}

void PackWriter::add(std::string_view bytes) {
  KG_ASSERT(!finished_ && fd_ >= 0, "PackWriter::add after finish() or a failed write");
  if (raw_.channels > 0)
    KG_CHECK(static_cast<int64_t>(bytes.size()) == raw_.bytes(), DataError, "cannot write ", path_, ": item ", size(),
             " has ", bytes.size(), " bytes, a raw ", raw_.height, "x", raw_.width, "x", raw_.channels, " item has ",
             raw_.bytes());
  static const char zeros[kPackAlign] = {};
  if (uint64_t r = pos_ % kPackAlign) append(std::string_view(zeros, kPackAlign - r));
  index_.push_back(pos_);
  index_.push_back(bytes.size());
  append(bytes);
}

std::string PackWriter::finish() {
  KG_ASSERT(!finished_ && fd_ >= 0, "PackWriter::finish called twice or after a failed write");
  try {
    static const char zeros[kPackAlign] = {};
    const uint64_t items_size = pos_ - kPackHeaderSize;
    if (uint64_t r = pos_ % kPackAlign) append(std::string_view(zeros, kPackAlign - r));
    const uint64_t index_offset = pos_;
    std::string index(index_.size() * 8, '\0');
    for (size_t i = 0; i < index_.size(); ++i) store_le64(reinterpret_cast<unsigned char*>(&index[8 * i]), index_[i]);
    append(index);
    const uint64_t meta_offset = pos_;
    append(meta_text_);
    flush();

    unsigned char h[kPackHeaderSize] = {};
    std::memcpy(h, kPackMagic, 8);
    store_le32(h + kOffVersion, kPackVersion);
    store_le32(h + kOffFlags, 0);
    store_le64(h + kOffCount, static_cast<uint64_t>(size()));
    store_le64(h + kOffItems, kPackHeaderSize);
    store_le64(h + kOffItemsSize, items_size);
    store_le64(h + kOffIndex, index_offset);
    store_le64(h + kOffIndexSize, index.size());
    store_le64(h + kOffMeta, meta_offset);
    store_le64(h + kOffMetaSize, meta_text_.size());
    store_le64(h + kOffFileSize, pos_);
    const uint64_t digest = hash_.digest();
    store_le64(h + kOffHash, digest);
    if (::pwrite(fd_, h, sizeof h, 0) != static_cast<ssize_t>(sizeof h))
      throw DataError("cannot write " + tmp_ + ": " + os_reason());
    if (::fsync(fd_) != 0) throw DataError("cannot fsync " + tmp_ + ": " + os_reason());
    int c = ::close(fd_);
    fd_ = -1;
    if (c != 0) throw DataError("cannot close " + tmp_ + ": " + os_reason());
    if (::rename(tmp_.c_str(), path_.c_str()) != 0)
      throw DataError("cannot rename " + tmp_ + " to " + path_ + ": " + os_reason());
    finished_ = true;
    auto dir = std::filesystem::path(path_).parent_path();
    fsync_directory(dir.empty() ? std::string(".") : dir.string());
    return hex64(digest);
  } catch (...) {
    if (!finished_) abandon();
    tmp_.clear();  // removed (or renamed) already
    throw;
  }
}

// ---- reader ----------------------------------------------------------------------------------------

std::shared_ptr<const PackReader> PackReader::open(const std::string& path) {
  std::shared_ptr<PackReader> r(new PackReader());
  r->path_ = path;
  auto fail = [&](const std::string& what) { return DataError(path + ": " + what); };

  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw DataError("cannot open pack " + path + ": " + os_reason());
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    int err = errno;
    ::close(fd);
    throw DataError("cannot stat " + path + ": " + std::strerror(err));
  }
  const uint64_t size = static_cast<uint64_t>(st.st_size);
  if (!S_ISREG(st.st_mode) || size < kPackHeaderSize) {
    ::close(fd);
    throw fail("the file is " + std::to_string(size) + " bytes, smaller than the " + std::to_string(kPackHeaderSize) +
               "-byte pack header; it is not a kgtrain pack or it is truncated — re-run kgtrain pack");
  }
  void* m = ::mmap(nullptr, size, PROT_READ, MAP_SHARED, fd, 0);
  int err = errno;
  ::close(fd);  // the mapping keeps the file open
  if (m == MAP_FAILED) throw DataError("cannot map " + path + " into memory: " + std::strerror(err));
  r->base_ = static_cast<const unsigned char*>(m);
  r->file_size_ = size;
  // Every epoch reads every item: when the pack fits comfortably in RAM, start reading it all in the
  // background. Larger packs keep the kernel's default readahead, which suits items of a few KB up.
  const long pages = ::sysconf(_SC_PHYS_PAGES), page = ::sysconf(_SC_PAGESIZE);
  if (pages > 0 && page > 0 && size <= static_cast<uint64_t>(pages) * static_cast<uint64_t>(page) / 4)
    ::madvise(m, size, MADV_WILLNEED);

  const unsigned char* h = r->base_;
  if (std::memcmp(h, kPackMagic, 8) != 0) throw fail("not a kgtrain pack (the file does not start with \"KGPACK01\")");
  const uint32_t version = load_le32(h + kOffVersion);
  if (version != kPackVersion)
    throw fail("pack format version " + std::to_string(version) + ", this kgtrain reads version " +
               std::to_string(kPackVersion) + " — re-run kgtrain pack with this kgtrain");
  if (uint32_t flags = load_le32(h + kOffFlags); flags != 0)
    throw fail("the header has unknown flags 0x" + hex64(flags).substr(8) + " (written by a newer kgtrain?)");
  const uint64_t stated = load_le64(h + kOffFileSize);
  if (stated != size)
    throw fail("the header says the pack is " + std::to_string(stated) + " bytes, the file has " +
               std::to_string(size) + kRedo);

  // Sections: [offset, offset + size) inside the file, after the header; checked without overflow.
  auto section = [&](const char* what, size_t off_field, size_t size_field) {
    const uint64_t off = load_le64(h + off_field), n = load_le64(h + size_field);
    if (off < kPackHeaderSize || off > size || n > size - off)
      throw fail(std::string("the ") + what + " section [" + std::to_string(off) + ", +" + std::to_string(n) +
                 ") lies outside the file (" + std::to_string(size) + " bytes)" + kRedo);
    return std::pair{off, n};
  };
  const auto [items_off, items_size] = section("item", kOffItems, kOffItemsSize);
  const auto [index_off, index_size] = section("index", kOffIndex, kOffIndexSize);
  const auto [meta_off, meta_size] = section("metadata", kOffMeta, kOffMetaSize);
  const uint64_t count = load_le64(h + kOffCount);
  if (count > size / kIndexEntry || index_size != count * kIndexEntry)
    throw fail("the index section is " + std::to_string(index_size) + " bytes for " + std::to_string(count) +
               " items (expected 16 per item)" + kRedo);
  r->count_ = static_cast<int64_t>(count);
  r->index_ = r->base_ + index_off;
  r->stored_hash_ = load_le64(h + kOffHash);

  std::string_view meta_text(reinterpret_cast<const char*>(r->base_ + meta_off), meta_size);
  r->meta_ = json::parse(meta_text, nullptr, /*allow_exceptions=*/false);
  if (r->meta_.is_discarded()) throw fail(std::string("the metadata section is not valid JSON") + kRedo);
  if (auto e = meta_problem(r->meta_, r->kind_, r->raw_); !e.empty()) throw fail(e + kRedo);
  r->table_csv_ = r->meta_.at("table_csv").get<std::string>();
  r->id_col_ = r->meta_.at("id_col").get<std::string>();

  const uint64_t items_end = items_off + items_size;
  for (uint64_t i = 0; i < count; ++i) {
    const uint64_t off = load_le64(r->index_ + kIndexEntry * i), n = load_le64(r->index_ + kIndexEntry * i + 8);
    const bool overflow = n > UINT64_MAX - off;
    if (overflow || off + n > size)
      throw fail("item " + std::to_string(i) + " ends at byte " +
                 (overflow ? std::string("2^64+") : std::to_string(off + n)) + " past the end of the file (" +
                 std::to_string(size) + " bytes)" + kRedo);
    if (off < items_off || off + n > items_end)
      throw fail("item " + std::to_string(i) + " [" + std::to_string(off) + ", " + std::to_string(off + n) +
                 ") lies outside the item section [" + std::to_string(items_off) + ", " + std::to_string(items_end) +
                 ")" + kRedo);
    if (r->kind_ == PackKind::raw && static_cast<int64_t>(n) != r->raw_.bytes())
      throw fail("item " + std::to_string(i) + " has " + std::to_string(n) + " bytes, a raw " +
                 std::to_string(r->raw_.height) + "x" + std::to_string(r->raw_.width) + "x" +
                 std::to_string(r->raw_.channels) + " item has " + std::to_string(r->raw_.bytes()) + kRedo);
  }

  // Item i is data row i of the table: a count mismatch means the pack and its table disagree.
  if (!r->table_csv_.empty()) {
    CsvTable t = parse_csv(r->table_csv_, path + " (table_csv)");
    if (static_cast<uint64_t>(t.rows.size()) != count)
      throw fail("the table in the metadata has " + std::to_string(t.rows.size()) + " data rows but the pack holds " +
                 std::to_string(count) + " items" + kRedo);
  }
  return r;
}

PackReader::~PackReader() {
  if (base_) ::munmap(const_cast<unsigned char*>(base_), file_size_);
}

std::string PackReader::name() const { return std::filesystem::path(path_).filename().string(); }

std::string_view PackReader::item(int64_t i) const {
  KG_CHECK(i >= 0 && i < count_, DataError, path_, ": item ", i, " requested, the pack holds ", count_, " items");
  const unsigned char* e = index_ + kIndexEntry * static_cast<uint64_t>(i);
  return {reinterpret_cast<const char*>(base_ + load_le64(e)), static_cast<size_t>(load_le64(e + 8))};
}

Image PackReader::image(int64_t i, int channels, int64_t max_pixels) const {
  KG_ASSERT(channels == 1 || channels == 3, "PackReader::image: channels must be 1 or 3, got ", channels);
  std::string_view bytes = item(i);
  if (kind_ == PackKind::encoded)
    return decode_image_bytes(bytes, name() + "#" + std::to_string(i), channels, 1, max_pixels);
  const int c = static_cast<int>(raw_.channels);
  Image wrapped(static_cast<int>(raw_.height), static_cast<int>(raw_.width), image_type(kDepth8U, c),
                const_cast<char*>(bytes.data()));  // read-only mapping: never written through
  if (c == channels) return wrapped.clone();
#if KG_WITH_OPENCV
  Image out;
  try {
    cv::cvtColor(wrapped, out, c == 3 ? cv::COLOR_RGB2GRAY : cv::COLOR_GRAY2RGB);
  } catch (const cv::Exception& e) {
    throw DataError(path_ + ": item " + std::to_string(i) + ": " + e.what());
  }
#else
  // OpenCV's conversions: gray replicated; RGB -> gray with its 14-bit fixed-point BT.601 weights.
  Image out(wrapped.rows, wrapped.cols, image_type(kDepth8U, channels));
  for (int y = 0; y < wrapped.rows; ++y) {
    const uint8_t* s = wrapped.ptr<uint8_t>(y);
    uint8_t* d = out.ptr<uint8_t>(y);
    for (int x = 0; x < wrapped.cols; ++x) {
      if (c == 1)
        d[3 * x] = d[3 * x + 1] = d[3 * x + 2] = s[x];
      else
        d[x] = static_cast<uint8_t>((s[3 * x] * 4899 + s[3 * x + 1] * 9617 + s[3 * x + 2] * 1868 + (1 << 13)) >> 14);
    }
  }
#endif
  return out;
}

std::string PackReader::hash() const { return hex64(stored_hash_); }

void PackReader::verify() const {
  std::string_view body(reinterpret_cast<const char*>(base_ + kPackHeaderSize), file_size_ - kPackHeaderSize);
  const uint64_t actual = kg::xxh64(body);
  KG_CHECK(actual == stored_hash_, DataError, path_, ": content hash mismatch (stored ", hex64(stored_hash_),
           ", computed ", hex64(actual), "); the pack is damaged — re-run kgtrain pack");
}

}  // namespace kg::data
