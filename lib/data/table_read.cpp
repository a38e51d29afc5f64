// read_table: which reader a user's table needs (data/table_read.h).
#include "data/table_read.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/fs.h"
#include "core/strings.h"

namespace fs = std::filesystem;

namespace kg::data {
namespace table_read_impl {

std::string lower_ext(const fs::path& p) {
  std::string e = p.extension().string();
  for (char& c : e) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return e;
}

// A table file's bytes, mapped read-only: the pages and buffers of columns kgtrain does not read (a dataset's
// in-table images: most of its bytes) are never read from the disk. Empty or unmappable files are read instead.
class TableFile {
 public:
  explicit TableFile(const std::string& path) {
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    struct stat st {};
    if (fd >= 0 && ::fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0) {
      void* m = ::mmap(nullptr, static_cast<size_t>(st.st_size), PROT_READ, MAP_PRIVATE, fd, 0);
      if (m != MAP_FAILED) map_ = m, size_ = static_cast<size_t>(st.st_size);
    }
    if (fd >= 0) ::close(fd);
    if (!map_) text_ = read_file(path);  // its DataError names the path and the reason
  }
  ~TableFile() {
    if (map_) ::munmap(map_, size_);
  }
  TableFile(const TableFile&) = delete;
  TableFile& operator=(const TableFile&) = delete;
  std::string_view bytes() const { return map_ ? std::string_view(static_cast<const char*>(map_), size_) : text_; }

 private:
  void* map_ = nullptr;
  size_t size_ = 0;
  std::string text_;
};

// The .arrow shards of a save_to_disk folder, in state.json's order.
std::vector<fs::path> dataset_shards(const fs::path& dir) {
  const fs::path state = dir / "state.json";
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(read_file(state.string()));
  } catch (const nlohmann::json::exception& e) {
    throw DataError(state.string() + ": not JSON kgtrain can read (" + e.what() + ")");
  }
  KG_CHECK(j.is_object() && j.contains("_data_files") && j["_data_files"].is_array(), DataError, state.string(),
           ": no \"_data_files\" list (is this a `datasets` save_to_disk folder?)");
  std::vector<fs::path> out;
  for (const auto& f : j["_data_files"]) {
    KG_CHECK(f.is_object() && f.contains("filename") && f["filename"].is_string(), DataError, state.string(),
             ": an entry of \"_data_files\" without a \"filename\"");
    const fs::path name = f["filename"].get<std::string>();
    KG_CHECK(!name.empty() && name.is_relative() && name.filename() == name, DataError, state.string(), ": \"",
             name.string(), "\" is not a file name inside the folder");
    out.push_back(dir / name);
  }
  KG_CHECK(!out.empty(), DataError, state.string(), ": \"_data_files\" is empty");
  return out;
}

}  // namespace table_read_impl

bool is_dataset_folder(const std::string& path) {
  std::error_code ec;
  return fs::is_directory(path, ec) && fs::is_regular_file(fs::path(path) / "state.json", ec);
}

bool table_exists(const std::string& path) {
  std::error_code ec;
  return fs::is_regular_file(path, ec) || is_dataset_folder(path);
}

CsvTable read_table(const std::string& path) {
  using table_read_impl::lower_ext;
  std::error_code ec;
  const fs::path p(path);
  if (fs::is_directory(p, ec)) {
    if (!is_dataset_folder(path)) {
      // A DatasetDict's folder: its splits are folders of their own.
      std::string splits;
      for (auto& e : fs::directory_iterator(p, ec))
        if (e.is_directory() && is_dataset_folder(e.path().string()))
          splits += (splits.empty() ? "" : ", ") + e.path().filename().string();
      KG_CHECK(splits.empty(), DataError, path, " is a DatasetDict folder; name one of its splits (", splits,
               "), e.g. ", (p / "train").string());
      throw DataError(path +
                      " is a folder, not a table: a table is a .csv or .parquet file, a .arrow file, or a "
                      "`datasets` save_to_disk folder (with state.json and dataset_info.json)");
    }
    CsvTable t;
    t.path = path;
    for (const fs::path& shard : table_read_impl::dataset_shards(p)) {
      KG_CHECK(fs::is_regular_file(shard, ec), DataError, path, ": state.json lists ", shard.filename().string(),
               ", which is not in the folder");
      const table_read_impl::TableFile file(shard.string());
      parse_arrow_ipc(file.bytes(), shard.string(), t);
    }
    return t;
  }
  const std::string ext = lower_ext(p);
  if (ext == ".parquet" || ext == ".pq") return parse_parquet(table_read_impl::TableFile(path).bytes(), path);
  if (ext == ".arrow" || ext == ".feather" || ext == ".ipc") {
    CsvTable t;
    t.path = path;
    parse_arrow_ipc(table_read_impl::TableFile(path).bytes(), path, t);
    return t;
  }
  return read_csv(path);
}

}  // namespace kg::data
