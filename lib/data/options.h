// The `data` and `cv` recipe sections.
#pragma once
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "config/schema.h"
#include "core/tasks.h"

namespace kg::data {

// data.image_size, a key of three forms: N, [height, width], or a progressive-resizing schedule
// [[0, 96], [0.5, 128, 64], ...] of [start fraction of training, size, optional batch size].
struct ImageSize {
  struct Stage {
    double start = 0;
    int64_t height = 0, width = 0;
    int64_t batch_size = 0;  // 0 = train.batch_size
  };
  static constexpr config::Type kRecipeType = config::Type::Any;
  static std::string check(const config::json& v);                 // "" for a valid form, else "expected ..."
  ImageSize(int64_t side = 224) : stages{{0.0, side, side, 0}} {}  // NOLINT(google-explicit-constructor)
  std::vector<Stage> stages;                                       // one stage for a fixed size
  bool schedule = false;  // written as a schedule (a one-stage schedule stays one)
  bool square = true;     // a fixed size written as N
};
void from_json(const config::json& j, ImageSize& s);
void to_json(config::json& j, const ImageSize& s);

// cv.fold, a key of three forms: a held-out fold, a list of them, or "all" (every fold of cv.folds).
struct FoldSelection {
  struct All {};
  static constexpr config::Type kRecipeType = config::Type::Any;
  static std::string check(const config::json& v);  // "" for a valid form, else "expected ..."
  FoldSelection(int64_t k = 0) : form(k) {}         // NOLINT(google-explicit-constructor): a number is a fold
  std::variant<int64_t, std::vector<int64_t>, All> form;
};
void from_json(const config::json& j, FoldSelection& f);
void to_json(config::json& j, const FoldSelection& f);

// Recipe section [data]; each field's doc is in data_fields() (data/options.cpp) and docs/reference.md.
struct DataOptions {
  static DataOptions load(const config::Tree& recipe);  // recipe.get<DataOptions>() decodes it once
  std::string format = "auto";
  std::string root = "data";
  std::string train_csv = "train.csv";
  std::string test_csv = "test.csv";
  std::string sample_submission;
  std::string image_dir = "train";
  std::string test_image_dir = "test";
  std::string extra_train_csv;
  std::string extra_image_dir;
  std::string id_col = "id";
  std::string image_ext = ".png";
  std::string path_col;
  std::vector<std::string> label_cols{"label"};
  std::string label_sep = " ";
  std::vector<std::string> feature_cols;
  std::string modality = "auto";
  std::vector<std::string> text_cols;
  int64_t max_length = 256;
  std::string truncation_side = "right";
  std::string truncation = "longest_first";
  std::optional<int64_t> stride;
  std::string window_pool = "mean";
  bool group_by_length = false;
  Task task = Task::multiclass;
  std::string target_transform = "none";
  std::string on_bad_row = "error";
  std::string train_pack = "train.kgpack";
  std::string test_pack = "test.kgpack";
  std::optional<int64_t> num_classes;
  int64_t max_classes = 100000;
  int64_t max_image_pixels = 89478485;  // data::kDefaultMaxImagePixels (PIL's)
  int64_t channels = 3;
  ImageSize image_size = 224;
  int64_t num_workers = 2;
  int64_t prefetch = 4;
  config::json augment = config::json::array();
  bool pin_memory = true;
  bool uint8_transfer = false;
  bool reduced_decode = true;
  std::string cache = "none";
  double cache_max_gb = 4.0;
};

// Recipe section [cv]; each field's doc is in cv_fields() (data/options.cpp) and docs/reference.md.
struct CvOptions {
  static CvOptions load(const config::Tree& recipe);  // recipe.get<CvOptions>() decodes it once
  int64_t folds = 5;
  FoldSelection fold = 0;
  std::vector<int64_t> run_folds;  // cv.fold expanded (filled by load)
  int64_t held_out = 0;            // the fold split_folds holds out (the first of run_folds)
  std::string strategy = "auto";
  std::string group_col;
  std::string fold_col = "fold";
};

// data.modality in effect: "text" when data.text_cols names columns (or modality says so), else "image"
// (session/modality.h: what each can do).
std::string resolved_modality(const DataOptions& o);
bool is_text(const DataOptions& o);  // resolved_modality(o) == "text": the table reads the text columns

struct ImageGeometry {
  int64_t height = 0, width = 0, channels = 3;
};

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

}  // namespace kg::data
