#include "data/idx_import.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <utility>

#include "core/error.h"
#include "core/fs.h"
#include "core/parallel_for.h"
#include "data/csv.h"
#include "data/image_io.h"
#include "data/pack.h"
#include "build_info.h"

namespace kg::data {
namespace {

namespace stdfs = std::filesystem;

constexpr uint32_t kImageMagic = 0x00000803;  // unsigned byte, 3 dimensions
constexpr uint32_t kLabelMagic = 0x00000801;  // unsigned byte, 1 dimension

struct IdxImages {
  int64_t count = 0;
  int height = 0, width = 0;
  std::string bytes;  // whole file; pixels start at offset 16
  const unsigned char* pixels(int64_t i) const {
    return reinterpret_cast<const unsigned char*>(bytes.data()) + 16 + i * height * width;
  }
};

struct IdxLabels {
  int64_t count = 0;
  std::string bytes;  // whole file; labels start at offset 8
  int label(int64_t i) const { return static_cast<unsigned char>(bytes[8 + i]); }
};

// gzread passes non-gzip files through unchanged, so one reader covers .gz and raw IDX.
std::string read_maybe_gz(const std::string& path) {
  gzFile f = gzopen(path.c_str(), "rb");
  if (!f) throw DataError("cannot read " + path + ": " + std::strerror(errno ? errno : ENOMEM));
  std::string out;
  const unsigned chunk = 1u << 20;
  for (;;) {
    size_t have = out.size();
    out.resize(have + chunk);
    int n = gzread(f, &out[have], chunk);
    if (n < 0) break;
    out.resize(have + static_cast<size_t>(n));
    if (n == 0) break;
  }
  int err = Z_OK;
  const char* msg = gzerror(f, &err);
  std::string reason = err == Z_ERRNO ? std::strerror(errno) : (msg ? msg : "");
  gzclose(f);
  // A cut-off gzip stream reports Z_BUF_ERROR ("unexpected end of file").
  KG_CHECK(err == Z_OK || err == Z_STREAM_END, DataError, "cannot read ", path, ": ", reason,
           " (damaged or truncated gzip file)");
  return out;
}

uint32_t be32(const std::string& b, size_t at) {
  auto u = [&](size_t k) { return static_cast<uint32_t>(static_cast<unsigned char>(b[at + k])); };
  return u(0) << 24 | u(1) << 16 | u(2) << 8 | u(3);
}

std::string hex32(uint32_t v) {
  char s[16];
  std::snprintf(s, sizeof s, "0x%08X", v);
  return s;
}

void check_magic(const std::string& b, const std::string& path, uint32_t want, const char* kind) {
  KG_CHECK(b.size() >= 4, DataError, path, ": not an IDX ", kind, " file (only ", b.size(),
           " bytes, expected a 4-byte magic number ", hex32(want), " first)");
  uint32_t magic = be32(b, 0);
  KG_CHECK(magic == want, DataError, path, ": not an IDX ", kind, " file (magic number ", hex32(magic), ", expected ",
           hex32(want), ")", magic == kImageMagic ? "; it holds images" : "",
           magic == kLabelMagic ? "; it holds labels" : "");
}

IdxImages load_images(const std::string& path) {
  IdxImages im;
  im.bytes = read_maybe_gz(path);
  const std::string& b = im.bytes;
  check_magic(b, path, kImageMagic, "image");
  KG_CHECK(b.size() >= 16, DataError, path, " is truncated: expected a 16-byte header, file has ", b.size(), " bytes");
  uint32_t n = be32(b, 4), h = be32(b, 8), w = be32(b, 12);
  KG_CHECK(n > 0 && h > 0 && w > 0 && h <= 65535 && w <= 65535, DataError, path, ": implausible dimensions ", n, " x ",
           h, " x ", w, " (images x rows x columns)");
  im.count = n;
  im.height = static_cast<int>(h);
  im.width = static_cast<int>(w);
  const uint64_t expected = 16 + uint64_t{n} * h * w;
  KG_CHECK(b.size() >= expected, DataError, path, " is truncated: expected ", n, " images of ", h, "x", w, " (",
           expected, " bytes), file has ", b.size(), " bytes");
  KG_CHECK(b.size() == expected, DataError, path, " has ", b.size() - expected, " bytes after its ", n, " images of ",
           h, "x", w, " (wrong header or not an IDX file)");
  return im;
}

IdxLabels load_labels(const std::string& path) {
  IdxLabels lb;
  lb.bytes = read_maybe_gz(path);
  const std::string& b = lb.bytes;
  check_magic(b, path, kLabelMagic, "label");
  KG_CHECK(b.size() >= 8, DataError, path, " is truncated: expected an 8-byte header, file has ", b.size(), " bytes");
  lb.count = be32(b, 4);
  const uint64_t expected = 8 + static_cast<uint64_t>(lb.count);
  KG_CHECK(b.size() >= expected, DataError, path, " is truncated: expected ", lb.count, " labels (", expected,
           " bytes), file has ", b.size(), " bytes");
  KG_CHECK(b.size() == expected, DataError, path, " has ", b.size() - expected, " bytes after its ", lb.count,
           " labels (wrong header or not an IDX file)");
  return lb;
}

// Plain write: durability comes from one syncfs over the directory, which is far cheaper than an
// fsync per image.
void write_plain(const std::string& path, const std::string& bytes) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
  if (fd < 0) throw DataError("cannot create " + path + ": " + std::strerror(errno));
  size_t done = 0;
  while (done < bytes.size()) {
    ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      int err = errno;
      ::close(fd);
      throw DataError("cannot write " + path + ": " + std::strerror(err));
    }
    done += static_cast<size_t>(n);
  }
  if (::close(fd) != 0) throw DataError("cannot write " + path + ": " + std::strerror(errno));
}

// True when `path` already holds exactly `bytes`.
bool same_content(const std::string& path, const std::string& bytes) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  struct stat st {};
  bool same = ::fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && static_cast<uint64_t>(st.st_size) == bytes.size();
  if (same) {
    std::string have(bytes.size(), '\0');
    size_t got = 0;
    for (ssize_t n; got < have.size(); got += static_cast<size_t>(n))
      if ((n = ::read(fd, &have[got], have.size() - got)) <= 0) break;
    same = got == have.size() && have == bytes;
  }
  ::close(fd);
  return same;
}

void sync_tree(const std::string& dir) {
  int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) throw DataError("cannot open directory " + dir + ": " + std::strerror(errno));
  int rc = ::syncfs(fd);
  int err = errno;
  ::close(fd);
  if (rc != 0) throw DataError("cannot sync " + dir + ": " + std::strerror(err));
}

// Removes everything in `dir` that is not <id>.png for an id in [first, first + count).
void remove_stale(const std::string& dir, int64_t first, int64_t count) {
  std::error_code ec;
  for (const auto& e : stdfs::directory_iterator(dir)) {
    const std::string name = e.path().filename().string();
    const std::string stem = name.size() > 4 ? name.substr(0, name.size() - 4) : "";
    bool keep = name.size() > 4 && name.compare(name.size() - 4, 4, ".png") == 0 && stem.size() <= 18 &&
                stem[0] != '0' && stem.find_first_not_of("0123456789") == std::string::npos;
    keep = keep && std::stoll(stem) >= first && std::stoll(stem) < first + count;
    if (!keep && !remove_tree(e.path().string(), ec))
      throw DataError("cannot remove " + e.path().string() + ": " + ec.message());
  }
}

// Writes <out_dir>/<split>/<first_id + i>.png for every image. A new directory is built aside and
// renamed into place. An existing one is updated in place, skipping files that already hold the
// right bytes: a re-run then deletes nothing, which matters because unlinking 70000 files takes
// minutes on some disks (ext4 with online discard).
void write_split(const IdxImages& im, const std::string& out_dir, const std::string& split, int64_t first_id,
                 int threads) {
  const std::string dst = out_dir + "/" + split;
  const std::string stage = out_dir + "/." + split + ".partial";
  std::error_code ec;
  remove_tree(stage, ec);  // left by an interrupted run
  const bool update = stdfs::is_directory(dst, ec);
  const std::string dir = update ? dst : stage;
  stdfs::create_directories(dir, ec);
  if (ec) throw DataError("cannot create directory " + dir + ": " + ec.message());

  const auto count = static_cast<size_t>(std::max<int64_t>(im.count, 0));
  std::vector<std::string> pngs(static_cast<size_t>(parallel_workers(count, std::max(1, threads))));
  try {
    parallel_for(count, std::max(1, threads), [&](size_t item, int worker) {
      const auto i = static_cast<int64_t>(item);
      std::string& png = pngs[static_cast<size_t>(worker)];
      // A Mat header over the file's bytes: no pixel copy before encoding.
      const Image m(im.height, im.width, image_type(kDepth8U, 1), const_cast<unsigned char*>(im.pixels(i)));
      encode_png(m, png);
      const std::string path = dir + "/" + std::to_string(first_id + i) + ".png";
      if (!update) {
        write_plain(path, png);
      } else if (!same_content(path, png)) {
        write_plain(path + ".tmp", png);  // a reader sees the old or the new image, never half
        if (::rename((path + ".tmp").c_str(), path.c_str()) != 0)
          throw DataError("cannot rename " + path + ".tmp: " + std::strerror(errno));
      }
    });
  } catch (...) {
    if (!update) remove_tree(stage, ec);
    throw;
  }
  if (update) remove_stale(dst, first_id, im.count);  // also sweeps .tmp files of a killed run
  sync_tree(dir);
  if (!update) replace_directory(stage, dst);
}

// Writes <out_dir>/<split>.kgpack: one raw pack of the split's 8-bit gray images, whose table is
// id[,label] with ids first_id, first_id + 1, ... (labels only for train, as in train.csv/test.csv).
void write_pack(const IdxImages& im, const IdxLabels& labels, const IdxImportOptions& o, const std::string& split,
                int64_t first_id) {
  const bool train = split == "train";
  std::string table = train ? "id,label\n" : "id\n";
  for (int64_t i = 0; i < im.count; ++i)
    table += std::to_string(first_id + i) + (train ? "," + std::to_string(labels.label(i)) : "") + "\n";
  const nlohmann::json meta = {{"kind", "raw"},
                               {"height", im.height},
                               {"width", im.width},
                               {"channels", 1},
                               {"table_csv", table},
                               {"id_col", "id"},
                               {"source", "idx:" + (train ? o.train_images : o.test_images)},
                               {"split", split},
                               {"created_by", std::string("kgtrain ") + KGTRAIN_VERSION}};
  std::error_code ec;
  stdfs::create_directories(o.out_dir, ec);
  if (ec) throw DataError("cannot create directory " + o.out_dir + ": " + ec.message());
  PackWriter w(o.out_dir + "/" + split + ".kgpack", meta);
  const size_t bytes = static_cast<size_t>(im.height) * static_cast<size_t>(im.width);
  for (int64_t i = 0; i < im.count; ++i) w.add(std::string_view(reinterpret_cast<const char*>(im.pixels(i)), bytes));
  w.finish();
}

// Marks a directory as import-idx's own output (created_by, layout): only such a directory, a new or an
// empty one is written into, so a re-import may replace its files.
constexpr const char* kImportMarker = ".kgtrain-import.json";

// Refuses an output directory that holds anything import-idx did not write (a competition download has
// the same train.csv, test.csv and train/ names) before a byte is written; else marks it as ours.
void claim_out_dir(const IdxImportOptions& o) {
  std::error_code ec;
  const stdfs::path dir(o.out_dir);
  if (stdfs::exists(dir, ec) && !stdfs::is_directory(dir, ec))
    throw UsageError("import-idx --out " + o.out_dir + " is a file, not a directory");
  if (stdfs::is_directory(dir, ec) && !stdfs::exists(dir / kImportMarker, ec)) {
    std::vector<std::string> names;
    for (const auto& e : stdfs::directory_iterator(dir, ec))
      names.push_back(e.path().filename().string() + (e.is_directory(ec) ? "/" : ""));
    if (!names.empty()) {
      std::sort(names.begin(), names.end());
      std::string list;
      for (size_t i = 0; i < names.size() && i < 6; ++i) list += (i ? ", " : "") + names[i];
      if (names.size() > 6) list += ", ... (" + std::to_string(names.size()) + " entries)";
      throw UsageError("import-idx --out " + o.out_dir +
                       ": the directory is not empty and was not written by "
                       "import-idx (it holds " +
                       list +
                       "); nothing was changed. Import into a new or empty "
                       "directory, or empty this one first");
    }
  }
  make_directories(o.out_dir);
  const nlohmann::json marker = {{"created_by", std::string("kgtrain ") + KGTRAIN_VERSION},
                                 {"layout", o.packs ? "packs" : "png"},
                                 {"note",
                                  "written by kgtrain import-idx, which may replace this directory's "
                                  "train/, test/, CSV and .kgpack files when run again"}};
  write_file_atomic((dir / kImportMarker).string(), marker.dump(2) + "\n");
}

// After a re-import in the other layout, the earlier one's files would be read instead of the new ones
// (data.format = "auto" prefers train.csv): they go, in our own directory only.
void remove_other_layout(const IdxImportOptions& o) {
  std::error_code ec;
  const std::vector<std::string> stale = o.packs ? std::vector<std::string>{"train.csv", "test.csv", "train", "test"}
                                                 : std::vector<std::string>{"train.kgpack", "test.kgpack"};
  for (const auto& name : stale) {
    const std::string path = o.out_dir + "/" + name;
    if (stdfs::exists(path, ec) && !remove_tree(path, ec))
      throw DataError("cannot remove " + path + ": " + ec.message());
  }
}

}  // namespace

IdxImportReport import_idx(const IdxImportOptions& o) {
  std::string missing;
  for (auto [value, what] : {std::pair{&o.train_images, "train images"},
                             {&o.train_labels, "train labels"},
                             {&o.test_images, "test images"},
                             {&o.test_labels, "test labels"},
                             {&o.out_dir, "output directory"}})
    if (value->empty()) missing += (missing.empty() ? "" : ", ") + std::string(what);
  KG_CHECK(missing.empty(), UsageError, "IDX import needs: ", missing);

  const IdxImages train = load_images(o.train_images), test = load_images(o.test_images);
  const IdxLabels train_y = load_labels(o.train_labels), test_y = load_labels(o.test_labels);
  KG_CHECK(train.count == train_y.count, DataError, "train images (", o.train_images, ": ", train.count,
           ") and labels (", o.train_labels, ": ", train_y.count, ") differ in count");
  KG_CHECK(test.count == test_y.count, DataError, "test images (", o.test_images, ": ", test.count, ") and labels (",
           o.test_labels, ": ", test_y.count, ") differ in count");
  KG_CHECK(train.height == test.height && train.width == test.width, DataError, "train images (", o.train_images,
           ") are ", train.height, "x", train.width, " but test images (", o.test_images, ") are ", test.height, "x",
           test.width);
  if (!o.class_names.empty()) {
    for (const IdxLabels* lb : {&train_y, &test_y})
      for (int64_t i = 0; i < lb->count; ++i)
        KG_CHECK(lb->label(i) < static_cast<int>(o.class_names.size()), DataError, "label ", lb->label(i), " (item ",
                 i + 1, " of ", lb == &train_y ? o.train_labels : o.test_labels, ") has no class name; ",
                 o.class_names.size(), " names were given");
  }

  claim_out_dir(o);
  // Images first, so no CSV ever names an image that is not there yet.
  if (o.packs) {
    write_pack(train, train_y, o, "train", 1);
    write_pack(test, test_y, o, "test", train.count + 1);
  } else {
    write_split(train, o.out_dir, "train", 1, o.threads);
    write_split(test, o.out_dir, "test", train.count + 1, o.threads);
  }

  std::string train_csv = "id,label\n", test_csv = "id\n", sample = "id,label\n", truth = "id,label\n";
  for (int64_t i = 0; i < train.count; ++i)
    train_csv += std::to_string(i + 1) + "," + std::to_string(train_y.label(i)) + "\n";
  for (int64_t i = 0; i < test.count; ++i) {
    const std::string id = std::to_string(train.count + 1 + i);
    test_csv += id + "\n";
    sample += id + ",0\n";
    truth += id + "," + std::to_string(test_y.label(i)) + "\n";
  }
  // With packs the tables live inside them (and a train.csv would make data.format = "auto" look
  // for PNG files).
  if (!o.packs) {
    write_file_atomic(o.out_dir + "/train.csv", train_csv);
    write_file_atomic(o.out_dir + "/test.csv", test_csv);
  }
  write_file_atomic(o.out_dir + "/sample_submission.csv", sample);
  write_file_atomic(o.out_dir + "/test_labels.csv", truth);
  if (!o.class_names.empty()) {
    std::string classes = "index,name\n";
    for (size_t k = 0; k < o.class_names.size(); ++k) classes += csv_line({std::to_string(k), o.class_names[k]});
    write_file_atomic(o.out_dir + "/classes.csv", classes);
  }
  remove_other_layout(o);
  return {train.count, test.count, train.height, train.width};
}

}  // namespace kg::data
