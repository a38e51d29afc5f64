// The `data` and `cv` recipe sections.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "config/tree.h"

namespace kg::data {

struct DataOptions {
  std::string root = "data";               ///< dataset folder, relative to the working directory
  std::string train_csv = "train.csv";     ///< training table (relative to root)
  std::string test_csv = "test.csv";       ///< table of rows to predict (relative to root)
  std::string sample_submission;           ///< the competition's sample submission ("" = none)
  std::string image_dir = "train";         ///< folder of training images (relative to root)
  std::string test_image_dir = "test";     ///< folder of test images (relative to root)
  std::string id_col = "id";               ///< column naming each image: <image_dir>/<id><image_ext>
  std::string image_ext = ".png";          ///< image file extension, with or without the dot
  std::vector<std::string> label_cols{"label"};  ///< target column(s)
  std::string task = "multiclass";         ///< prediction task
  std::optional<int64_t> num_classes;      ///< when set: integer labels lie in [0, n), string labels number n
  int64_t channels = 3;                    ///< image channels fed to the model (1 gray, 3 RGB)
  config::json image_size = 224;           ///< model input size: N or [height, width]
  int64_t num_workers = 2;                 ///< decode/augment threads (0 = in the training thread)
  int64_t prefetch = 4;                    ///< batches prepared ahead of the model
  config::json augment = config::json::array();  ///< training transforms, in order: [{ name = "hflip" }, ...]
};

struct CvOptions {
  int64_t folds = 5;  ///< number of cross-validation folds
  int64_t fold = 0;   ///< the fold held out for validation
};

struct ImageGeometry {
  int64_t height = 0, width = 0, channels = 3;
};

DataOptions load_data_options(const config::Tree& recipe);
CvOptions load_cv_options(const config::Tree& recipe);
ImageGeometry geometry(const DataOptions& o);

// `rel` under data.root unless absolute.
std::string data_path(const DataOptions& o, const std::string& rel);
// "<root>/<dir>/<id><ext>"
std::string image_path(const DataOptions& o, const std::string& dir, const std::string& id);

}  // namespace kg::data
