// folder: one sub-folder per class (train/<class>/**/*.jpg), torchvision's ImageFolder and
// fastai's from_folder layout. Test images: data.test_csv when it exists, else every image under
// data.test_image_dir (id = path without extension).
#include <algorithm>
#include <cctype>
#include <filesystem>

#include "core/error.h"
#include "data/source.h"
#include "data/table_read.h"

namespace fs = std::filesystem;

namespace kg::data {
namespace {

bool is_image(const fs::path& p) {
  std::string e = p.extension().string();
  for (char& c : e) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  static const char* kExt[] = {".jpg", ".jpeg", ".png", ".bmp", ".tif", ".tiff", ".webp", ".pgm", ".ppm"};
  return std::any_of(std::begin(kExt), std::end(kExt), [&](const char* x) { return e == x; });
}

// Image files under `dir`, relative, sorted (the order must not depend on the file system).
std::vector<std::string> images_under(const fs::path& dir) {
  std::vector<std::string> out;
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(dir, fs::directory_options::follow_directory_symlink, ec);
       !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
    if (it->is_regular_file(ec) && is_image(it->path()))
      out.push_back(it->path().lexically_relative(dir).generic_string());
  }
  KG_CHECK(!ec, DataError, "cannot list ", dir.string(), ": ", ec.message());
  std::sort(out.begin(), out.end());
  return out;
}

class FolderSource : public Source {
 public:
  void open(const DataOptions& o, Split split, OpenedSource& out) const override {
    out.src.id_col = "id";
    out.src.path_col = "path";
    out.src.label_cols = {"label"};
    std::error_code ec;
    if (split == Split::test) {
      if (table_exists(data_path(o, o.test_csv))) {
        out.csv = read_table(data_path(o, o.test_csv));
        out.src.image_dir = o.test_image_dir;
        out.src.id_col = o.id_col;
        out.src.path_col = o.path_col;
        return;
      }
      const fs::path dir = data_path(o, o.test_image_dir);
      KG_CHECK(fs::is_directory(dir, ec), DataError, "data.format = \"folder\": no test table ",
               data_path(o, o.test_csv), " and no test image folder ", dir.string());
      out.csv.path = dir.string();
      out.csv.header = {"id", "path"};
      for (auto& rel : images_under(dir)) {
        std::string id = fs::path(rel).replace_extension().generic_string();
        out.csv.rows.push_back({id, rel});
      }
      out.src.image_dir = o.test_image_dir;
      return;
    }
    const fs::path dir = data_path(o, o.image_dir);
    KG_CHECK(fs::is_directory(dir, ec), DataError, "data.format = \"folder\": no image folder ", dir.string(),
             " (expected one sub-folder per class)");
    std::vector<std::string> classes;
    for (auto& e : fs::directory_iterator(dir, ec))
      if (e.is_directory()) classes.push_back(e.path().filename().string());
    std::sort(classes.begin(), classes.end());
    KG_CHECK(!classes.empty(), DataError, "data.format = \"folder\": ", dir.string(), " holds no class sub-folders");
    out.csv.path = dir.string();
    out.csv.header = {"id", "path", "label"};
    for (auto& c : classes)
      for (auto& rel : images_under(dir / c)) {
        std::string path = c + "/" + rel;
        out.csv.rows.push_back({path, path, c});
      }
    out.src.image_dir = o.image_dir;
  }
};

KG_REGISTER(source_registry(), "folder",
            "one sub-folder of images per class: image_dir/<class>/*.jpg (id = relative path)",
            "[data]\nformat = \"folder\"\nimage_dir = \"train\"", config::Fields<config::NoOptions>(),
            [](const config::NoOptions&) -> SourcePtr { return std::make_unique<FolderSource>(); });

}  // namespace
}  // namespace kg::data
