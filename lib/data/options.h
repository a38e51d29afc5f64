// The `data` and `cv` recipe sections.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "config/tree.h"

namespace kg::data {

struct DataOptions {
  std::string format = "auto";          ///< layout: auto | csv | folder | pack
  std::string root = "data";            ///< dataset folder, relative to the working directory
  std::string train_csv = "train.csv";  ///< training table (relative to root)
  std::string test_csv = "test.csv";    ///< table of rows to predict (relative to root)
  std::string sample_submission;        ///< the competition's sample submission ("" = none)
  std::string image_dir = "train";      ///< folder of training images (relative to root)
  std::string test_image_dir = "test";  ///< folder of test images (relative to root)
  std::string extra_train_csv;          ///< extra training-only rows (pseudo labels); "" = none
  std::string extra_image_dir;          ///< folder of extra_train_csv's images
  std::string id_col = "id";            ///< column naming each image: <image_dir>/<id><image_ext>
  std::string image_ext = ".png";       ///< image file extension, with or without the dot
  std::string path_col;  ///< column of image paths relative to the image folder ("" = id_col + image_ext)
  std::vector<std::string> label_cols{"label"};  ///< target column(s)
  std::string label_sep = " ";                   ///< multilabel: separator of label names in one column
  std::vector<std::string> feature_cols;         ///< numeric columns fed to the model beside the image
  std::string task = "multiclass";               ///< prediction task: multiclass | multilabel | binary | regression
  std::string on_bad_row = "error";  ///< error (stop, listing every bad row) | skip (train without them, bad_rows.csv)
  std::string train_pack = "train.kgpack";  ///< data.format = pack: the packed training table (relative to root)
  std::string test_pack = "test.kgpack";    ///< data.format = pack: the packed test table (relative to root)
  std::optional<int64_t> num_classes;       ///< when set: integer labels lie in [0, n), string labels number n
  int64_t channels = 3;                     ///< image channels fed to the model (1 gray, 3 RGB)
  config::json image_size =
      224;                  ///< model input size: N, [height, width], or a schedule [[fraction, size(, batch)], ...]
  int64_t num_workers = 2;  ///< decode/augment threads (0 = in the training thread)
  int64_t prefetch = 4;     ///< batches prepared ahead of the model
  config::json augment = config::json::array();  ///< training transforms, in order: [{ name = "hflip" }, ...]
  bool pin_memory = true;                        ///< CUDA: page-locked batches, copied asynchronously
  bool uint8_transfer = false;  ///< ship uint8 batches, scale + normalize on the device (timm PrefetchLoader)
  std::string cache = "none";  ///< none | ram (decoded images kept in memory) | device (one uint8 tensor on the device,
                               ///< augmented there)
  double cache_max_gb = 4.0;   ///< memory cap of the cache, GiB
};

struct CvOptions {
  int64_t folds = 5;               ///< number of cross-validation folds
  config::json fold = 0;           ///< held-out fold: an index, a list of indices, or "all" (train every fold)
  std::vector<int64_t> run_folds;  // cv.fold expanded (filled by load_cv_options)
  int64_t held_out = 0;            // the fold split_folds holds out (the first of run_folds)
  std::string strategy = "auto";   ///< auto | stratified | group | random | column
  std::string group_col;           ///< strategy group: rows sharing this column's value stay in one fold
  std::string fold_col = "fold";   ///< strategy column: the CSV's own fold column
};

struct ImageGeometry {
  int64_t height = 0, width = 0, channels = 3;
};

DataOptions load_data_options(const config::Tree& recipe);
CvOptions load_cv_options(const config::Tree& recipe);
// The final (evaluation) input size: data.image_size, or its schedule's last stage.
ImageGeometry geometry(const DataOptions& o);

// One stage of progressive resizing: from `start` (fraction of training) on, images of `size`,
// with `batch_size` (0 = train.batch_size).
struct SizeStage {
  double start = 0;
  ImageGeometry size;
  int64_t batch_size = 0;
};
// data.image_size as stages (one stage for a fixed size), sorted by start, the first at 0.
std::vector<SizeStage> size_schedule(const DataOptions& o);
// The stage index in force at `epoch` of `epochs`.
size_t stage_at(const std::vector<SizeStage>& s, int64_t epoch, int64_t epochs);

// ".png" for "png" or ".png"; "" stays "".
std::string normalized_ext(const std::string& ext);

// `rel` under data.root unless absolute.
std::string data_path(const DataOptions& o, const std::string& rel);
// "<root>/<dir>/<id><ext>"
std::string image_path(const DataOptions& o, const std::string& dir, const std::string& id);

}  // namespace kg::data
