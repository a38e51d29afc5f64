#include "data/options.h"

#include <filesystem>

#include "config/sections.h"

namespace kg::data {
namespace {

std::string check_image_size(const config::json& v) {
  auto positive = [](const config::json& x) { return x.is_number_integer() && x.get<int64_t>() > 0; };
  if (positive(v)) return "";
  if (v.is_array() && v.size() == 2 && positive(v[0]) && positive(v[1])) return "";
  return "expected a positive integer or [height, width] of positive integers, got " + v.dump();
}

config::Fields<DataOptions> data_fields() {
  config::Fields<DataOptions> f;
  f.field("root", &DataOptions::root, "dataset folder (relative to the working directory)");
  f.field("train_csv", &DataOptions::train_csv, "training table (relative to data.root)");
  f.field("test_csv", &DataOptions::test_csv, "rows to predict (relative to data.root)");
  f.field("sample_submission", &DataOptions::sample_submission, "sample submission CSV whose format predictions follow");
  f.field("image_dir", &DataOptions::image_dir, "training images folder (relative to data.root)");
  f.field("test_image_dir", &DataOptions::test_image_dir, "test images folder (relative to data.root)");
  f.field("id_col", &DataOptions::id_col, "id column: the image file is image_dir/ID + image_ext");
  f.field("image_ext", &DataOptions::image_ext, "image file extension, with or without the dot");
  f.field("label_cols", &DataOptions::label_cols, "target column(s)").check([](const config::json& v) -> std::string {
    return v.empty() ? "expected at least one column name" : "";
  });
  f.field("task", &DataOptions::task, "prediction task").choices({"multiclass"});
  f.field("num_classes", &DataOptions::num_classes, "number of classes (default: inferred from the labels)").min(2);
  f.field("channels", &DataOptions::channels, "channels fed to the model: 1 (gray) or 3 (RGB)")
      .check([](const config::json& v) -> std::string {
        auto c = v.get<int64_t>();
        return c == 1 || c == 3 ? "" : "expected 1 or 3, got " + std::to_string(c);
      });
  f.field("image_size", &DataOptions::image_size, "model input size: N or [height, width] (images are resized to it)")
      .check(check_image_size);
  f.field("num_workers", &DataOptions::num_workers, "decode/augment threads (0 = in the training thread)").range(0, 256);
  f.field("prefetch", &DataOptions::prefetch, "batches prepared ahead of the model").range(1, 1024);
  f.field("augment", &DataOptions::augment, "training transforms in order, e.g. [{ name = \"hflip\" }]").kind("transform")
      .check([](const config::json& v) -> std::string { return v.is_array() ? "" : "expected an array of tables"; });
  return f;
}

config::Fields<CvOptions> cv_fields() {
  config::Fields<CvOptions> f;
  f.field("folds", &CvOptions::folds, "number of stratified cross-validation folds").min(2);
  f.field("fold", &CvOptions::fold, "the fold held out for validation (0-based)").min(0);
  return f;
}

KG_REGISTER_SECTION("data", "the dataset, its layout and the input pipeline", data_fields().schema(), "");
KG_REGISTER_SECTION("cv", "cross-validation split", cv_fields().schema(), "");

}  // namespace

DataOptions load_data_options(const config::Tree& recipe) { return data_fields().load(config::Options(&recipe, "data")); }
CvOptions load_cv_options(const config::Tree& recipe) { return cv_fields().load(config::Options(&recipe, "cv")); }

ImageGeometry geometry(const DataOptions& o) {
  ImageGeometry g;
  g.channels = o.channels;
  if (o.image_size.is_array()) {
    g.height = o.image_size[0].get<int64_t>();
    g.width = o.image_size[1].get<int64_t>();
  } else {
    g.height = g.width = o.image_size.get<int64_t>();
  }
  return g;
}

std::string data_path(const DataOptions& o, const std::string& rel) {
  std::filesystem::path p(rel);
  if (p.is_absolute()) return rel;
  return (std::filesystem::path(o.root) / p).lexically_normal().string();
}

std::string image_path(const DataOptions& o, const std::string& dir, const std::string& id) {
  std::string ext = o.image_ext;
  if (!ext.empty() && ext[0] != '.') ext = "." + ext;
  return (std::filesystem::path(data_path(o, dir)) / (id + ext)).string();
}

}  // namespace kg::data
