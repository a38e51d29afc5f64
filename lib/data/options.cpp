#include "data/options.h"

#include <algorithm>

#include "config/sections.h"
#include "core/error.h"
#include "data/image_header.h"

namespace kg::data {
namespace {

bool positive(const config::json& x) { return x.is_number_integer() && x.get<int64_t>() > 0; }
bool is_size(const config::json& v) {
  return positive(v) || (v.is_array() && v.size() == 2 && positive(v[0]) && positive(v[1]));
}

bool is_schedule(const config::json& v) { return v.is_array() && !v.empty() && v[0].is_array(); }

std::string image_size_problem(const config::json& v) {
  if (is_size(v)) return "";
  if (!is_schedule(v))
    return "expected a positive integer, [height, width], or a schedule [[fraction, size], ...], got " + v.dump();
  double prev = -1;
  for (size_t i = 0; i < v.size(); ++i) {
    const auto& st = v[i];
    std::string at = "stage " + std::to_string(i) + " " + st.dump() + ": ";
    if (!st.is_array() || st.size() < 2 || st.size() > 3)
      return at + "expected [fraction, size] or [fraction, size, batch_size]";
    if (!st[0].is_number() || st[0].get<double>() < 0 || st[0].get<double>() >= 1)
      return at + "the start fraction must be a number in [0, 1)";
    if (st[0].get<double>() <= prev) return at + "start fractions must increase";
    if (i == 0 && st[0].get<double>() != 0) return at + "the first stage must start at 0";
    prev = st[0].get<double>();
    if (!is_size(st[1])) return at + "size must be a positive integer or [height, width]";
    if (st.size() == 3 && !positive(st[2])) return at + "batch_size must be a positive integer";
  }
  return "";
}

// The text modality's keys (data.text_cols and what reads it).
void add_text_fields(config::Fields<DataOptions>& f) {
  f.field("modality", &DataOptions::modality,
          "what a row's input is: image (its image file), text (data.text_cols, tokenized by model.pretrained's "
          "tokenizer), auto (text when data.text_cols is set, else image)")
      .choices({"auto", "image", "text"});
  f.field("text_cols", &DataOptions::text_cols,
          "text: the column holding each row's text, or two columns encoded as a pair (the tokenizer's pair "
          "template: [CLS] a [SEP] b [SEP] and its type ids); [] = an image task")
      .check([](const config::json& v) -> std::string {
        return v.size() <= 2 ? "" : "expected one column or a pair of two, got " + std::to_string(v.size());
      });
  f.field("max_length", &DataOptions::max_length,
          "text: tokens per row (per window with data.stride), the special tokens included; longer rows are "
          "truncated (the fit header counts them); batches are padded to their longest row, rounded up to a "
          "multiple of 8")
      .range(2, 1 << 20);
  f.field("truncation_side", &DataOptions::truncation_side,
          "text: which end of a long text is cut (right keeps the start, left keeps the end)")
      .choices({"right", "left"});
  f.field("truncation", &DataOptions::truncation,
          "text pairs: which text loses tokens first: longest_first (the longer, token by token), only_first, "
          "only_second (the tokenizers library's strategies)")
      .choices({"longest_first", "only_first", "only_second"});
  f.field("stride", &DataOptions::stride,
          "text: sliding windows instead of truncation: a text longer than max_length becomes windows of max_length "
          "tokens (special tokens included), consecutive windows sharing this many tokens (the Hugging Face "
          "tokenizer's stride with return_overflowing_tokens); each window trains as a sample with its text's label, "
          "and prediction pools a text's windows into one row (window_pool). Below max_length minus the special "
          "tokens; single text columns only. Unset = truncate")
      .min(0);
  f.field("window_pool", &DataOptions::window_pool,
          "text with data.stride: how a text's window outputs (logits, or regression values) combine into its "
          "prediction before the activation: mean or max (element-wise)")
      .choices({"mean", "max"});
  f.field("group_by_length", &DataOptions::group_by_length,
          "text: training batches of rows of similar length (the Hugging Face Trainer's group_by_length: less "
          "padding, the same rows per epoch, seeded)");
}

config::Fields<DataOptions> data_fields() {
  config::Fields<DataOptions> f;
  f.field("format", &DataOptions::format,
          "dataset layout: csv (table + image folder), folder (one sub-folder per class), pack (kgtrain pack file), "
          "auto (csv when train_csv exists, else folder)")
      .choices({"auto", "csv", "folder", "pack"});
  f.field("root", &DataOptions::root, "dataset folder (relative to the working directory)");
  f.field("train_csv", &DataOptions::train_csv,
          "training table (relative to data.root): a .csv or .parquet file, an Arrow .arrow file, or a Hugging Face "
          "datasets save_to_disk folder");
  f.field("test_csv", &DataOptions::test_csv, "rows to predict (relative to data.root); any table train_csv reads");
  f.field("sample_submission", &DataOptions::sample_submission,
          "sample submission table (CSV, or any table train_csv reads) whose format predictions follow (\"\" = none)");
  f.field("image_dir", &DataOptions::image_dir, "training images folder (relative to data.root)");
  f.field("test_image_dir", &DataOptions::test_image_dir, "test images folder (relative to data.root)");
  f.field(
      "extra_train_csv", &DataOptions::extra_train_csv,
      "extra rows that only ever train, never validate (pseudo labels from kgtrain pseudo-label): a CSV with the id "
      "column, the label column(s) and, for soft targets, one prob_<class> column per class; absolute or relative to "
      "data.root; \"\" = none. folds.csv gives these rows fold -1");
  f.field(
      "extra_image_dir", &DataOptions::extra_image_dir,
      "folder holding extra_train_csv's images (normally the test image folder), absolute or relative to data.root; "
      "\"\" = data.test_image_dir");
  f.field("id_col", &DataOptions::id_col, "id column: the image file is image_dir/ID + image_ext");
  f.field("image_ext", &DataOptions::image_ext, "image file extension, with or without the dot");
  f.field("path_col", &DataOptions::path_col,
          "column of image paths relative to image_dir, sub-folders allowed (\"\" = id_col + image_ext)");
  f.field("label_cols", &DataOptions::label_cols,
          "target column(s): one for multiclass/binary, one per label (0/1) or one of names for multilabel, "
          "one per target for regression")
      .check([](const config::json& v) -> std::string { return v.empty() ? "expected at least one column name" : ""; });
  f.field("label_sep", &DataOptions::label_sep, "multilabel: separator between label names in one column");
  f.field("feature_cols", &DataOptions::feature_cols,
          "numeric columns passed to the model beside the image or the pooled text");
  add_text_fields(f);
  f.enum_field("task", &DataOptions::task, "prediction task", task_names());
  f.field("target_transform", &DataOptions::target_transform,
          "regression: the network predicts the target standardized (mean/std of the training fold), or its log1p "
          "standardized, and its output is mapped back, so loss, metrics, OOF and predictions are in target units "
          "(the fitted values travel in the weights as target_shift/target_scale); none = raw outputs")
      .choices({"none", "standardize", "log1p"});
  f.field("on_bad_row", &DataOptions::on_bad_row,
          "a row with a missing/undecodable image, bad label or path outside root: error (exit 3, all listed) or "
          "skip (train without it; run_dir/bad_rows.csv)")
      .choices({"error", "skip"});
  f.field("train_pack", &DataOptions::train_pack, "format pack: the training pack file (relative to data.root)");
  f.field("test_pack", &DataOptions::test_pack, "format pack: the test pack file (relative to data.root)");
  f.field("num_classes", &DataOptions::num_classes,
          "number of classes: integer labels lie in [0, n), string labels number n (default: inferred from the labels)")
      .min(2);
  f.field("max_classes", &DataOptions::max_classes,
          "refuse a training table naming more classes or labels than this (integer labels name classes 0..max: an "
          "id column taken for the label would ask for millions)")
      .min(2);
  f.field("max_image_pixels", &DataOptions::max_image_pixels,
          "refuse, from its header, an image declaring more pixels (width x height) than this, before decoding it: a "
          "decompression bomb's guard, PIL's default; raise it for real giant images")
      .min(1);
  f.field("channels", &DataOptions::channels, "channels fed to the model: 1 (gray) or 3 (RGB)")
      .check([](const config::json& v) -> std::string {
        auto c = v.get<int64_t>();
        return c == 1 || c == 3 ? "" : "expected 1 or 3, got " + std::to_string(c);
      });
  f.field("image_size", &DataOptions::image_size,
          "model input size: N or [height, width]; or progressive resizing [[0, 96], [0.5, 128, 64], ...] = "
          "[start fraction of training, size, optional batch size]; evaluation uses the last size");
  f.field("num_workers", &DataOptions::num_workers, "decode/augment threads (0 = in the training thread)")
      .range(0, 256);
  f.field("prefetch", &DataOptions::prefetch, "batches prepared ahead of the model").range(1, 1024);
  f.field("augment", &DataOptions::augment, "training transforms in order, e.g. [{ name = \"hflip\" }]")
      .kind("transform")
      .check([](const config::json& v) -> std::string { return v.is_array() ? "" : "expected an array of tables"; });
  f.field("pin_memory", &DataOptions::pin_memory,
          "on CUDA: page-locked host batches and non-blocking copies (ignored on CPU)");
  f.field("uint8_transfer", &DataOptions::uint8_transfer,
          "ship batches as uint8 (4x fewer bytes) and scale + normalize on the device, timm's PrefetchLoader; "
          "normalize must be the last transform");
  f.field("reduced_decode", &DataOptions::reduced_decode,
          "random_resized_crop on a JPEG decodes only its window, at the smallest M/8 scale that keeps the window "
          "at least data.image_size (libjpeg's DCT-domain scaling; the same windows, several times faster on large "
          "photos); data.cache = none only");
  f.field("cache", &DataOptions::cache,
          "none; ram: keep decoded images in memory after their first use (k folds share it); device: decode every "
          "training image once into one uint8 tensor on the training device and gather, augment (pad_crop, hflip, "
          "vflip) and normalize batches there (fit, lr-find, bench; prediction decodes as with ram)")
      .choices({"none", "ram", "device"});
  f.field("cache_max_gb", &DataOptions::cache_max_gb,
          "memory cap of the cache in GiB: ram decodes images past it each time; device refuses a table bigger than it")
      .min(0);
  return f;
}

config::Fields<CvOptions> cv_fields() {
  config::Fields<CvOptions> f;
  f.field("folds", &CvOptions::folds, "number of cross-validation folds").min(2);
  f.field("fold", &CvOptions::fold,
          "held-out fold (0-based), a list of folds, or \"all\": fit trains each listed fold in fold_<k>/ and writes "
          "oof.csv + cv.json");
  f.field("strategy", &CvOptions::strategy,
          "auto (group when group_col is set, else stratified), stratified (by class; multilabel by rarest label; "
          "regression by target quantile), group, random, column (the CSV's fold_col)")
      .choices({"auto", "stratified", "group", "random", "column"});
  f.field("group_col", &CvOptions::group_col,
          "strategy group: column whose rows must share a fold (patient, image set, ...)");
  f.field("fold_col", &CvOptions::fold_col, "strategy column: column holding each row's fold 0..folds-1");
  return f;
}

KG_REGISTER_SECTION("data", "the dataset, its layout and the input pipeline", data_fields().schema(), "");
KG_REGISTER_SECTION("cv", "cross-validation split", cv_fields().schema(), "");

}  // namespace

DataOptions DataOptions::load(const config::Tree& recipe) {
  auto d = data_fields().load(config::Options(&recipe, "data"));
  KG_CHECK(d.target_transform == "none" || d.task == Task::regression, ConfigError, "data.target_transform = \"",
           d.target_transform, "\" scales regression targets, and data.task = \"", task_name(d.task),
           "\" has classes: set it to \"none\"");
  KG_CHECK(d.modality != "text" || !d.text_cols.empty(), ConfigError,
           "data.modality = \"text\" needs data.text_cols: the column holding each row's text (or two, a pair)");
  KG_CHECK(d.modality != "image" || d.text_cols.empty(), ConfigError,
           "data.modality = \"image\" but data.text_cols names columns: set data.modality = \"text\" (or \"auto\") "
           "to train on the text, or data.text_cols = [] to train on images");
  return d;
}

std::string resolved_modality(const DataOptions& o) {
  if (o.modality != "auto") return o.modality;
  return o.text_cols.empty() ? "image" : "text";
}

bool is_text(const DataOptions& o) { return resolved_modality(o) == "text"; }

std::string ImageSize::check(const config::json& v) { return image_size_problem(v); }

namespace {
ImageSize::Stage stage_of(double start, const config::json& size, int64_t batch) {
  if (size.is_array()) return {start, size[0].get<int64_t>(), size[1].get<int64_t>(), batch};
  return {start, size.get<int64_t>(), size.get<int64_t>(), batch};
}
config::json size_json(const ImageSize::Stage& st, bool square) {
  return square && st.height == st.width ? config::json(st.height) : config::json::array({st.height, st.width});
}
}  // namespace

void from_json(const config::json& j, ImageSize& s) {
  s.stages.clear();
  s.schedule = is_schedule(j);
  if (!s.schedule) {
    s.square = !j.is_array();
    s.stages.push_back(stage_of(0.0, j, 0));
    return;
  }
  for (const auto& st : j)
    s.stages.push_back(stage_of(st[0].get<double>(), st[1], st.size() == 3 ? st[2].get<int64_t>() : 0));
}

void to_json(config::json& j, const ImageSize& s) {
  if (!s.schedule) {
    j = size_json(s.stages.front(), s.square);
    return;
  }
  j = config::json::array();
  for (const auto& st : s.stages) {
    config::json e = config::json::array({st.start, size_json(st, true)});
    if (st.batch_size > 0) e.push_back(st.batch_size);
    j.push_back(e);
  }
}

std::string FoldSelection::check(const config::json& v) {
  auto ok_int = [](const config::json& x) { return x.is_number_integer() && x.get<int64_t>() >= 0; };
  if (ok_int(v) || (v.is_string() && v.get<std::string>() == "all")) return "";
  if (v.is_array() && !v.empty()) {
    for (auto& x : v)
      if (!ok_int(x)) return "expected fold indices >= 0 in the list, got " + x.dump();
    return "";
  }
  return "expected a fold index >= 0, a non-empty list of them, or \"all\", got " + v.dump();
}

void from_json(const config::json& j, FoldSelection& f) {
  if (j.is_string())
    f.form = FoldSelection::All{};
  else if (j.is_array())
    f.form = j.get<std::vector<int64_t>>();
  else
    f.form = j.get<int64_t>();
}

void to_json(config::json& j, const FoldSelection& f) {
  if (std::holds_alternative<FoldSelection::All>(f.form))
    j = "all";
  else if (const auto* list = std::get_if<std::vector<int64_t>>(&f.form))
    j = *list;
  else
    j = std::get<int64_t>(f.form);
}

CvOptions CvOptions::load(const config::Tree& recipe) {
  auto cv = cv_fields().load(config::Options(&recipe, "cv"));
  cv.run_folds.clear();
  if (std::holds_alternative<FoldSelection::All>(cv.fold.form)) {
    for (int64_t k = 0; k < cv.folds; ++k) cv.run_folds.push_back(k);
  } else if (const auto* list = std::get_if<std::vector<int64_t>>(&cv.fold.form)) {
    for (int64_t k : *list) {
      KG_CHECK(std::find(cv.run_folds.begin(), cv.run_folds.end(), k) == cv.run_folds.end(), ConfigError,
               "cv.fold lists fold ", k, " twice");
      cv.run_folds.push_back(k);
    }
  } else {
    cv.run_folds.push_back(std::get<int64_t>(cv.fold.form));
  }
  for (int64_t k : cv.run_folds)
    KG_CHECK(k < cv.folds, ConfigError, "cv.fold = ", config::json(cv.fold).dump(), " names fold ", k,
             " but cv.folds = ", cv.folds, ": held-out folds must be in [0, ", cv.folds - 1, "]");
  cv.held_out = cv.run_folds.front();
  return cv;
}

ImageGeometry geometry(const DataOptions& o) { return size_schedule(o).back().size; }

std::vector<SizeStage> size_schedule(const DataOptions& o) {
  std::vector<SizeStage> out;
  for (const auto& st : o.image_size.stages)
    out.push_back({st.start, {st.height, st.width, o.channels}, st.batch_size});
  return out;
}

size_t stage_at(const std::vector<SizeStage>& s, int64_t epoch, int64_t epochs) {
  const double f = epochs > 0 ? static_cast<double>(epoch) / static_cast<double>(epochs) : 0.0;
  size_t k = 0;
  for (size_t i = 0; i < s.size(); ++i)
    if (s[i].start <= f + 1e-9) k = i;
  return k;
}

std::string normalized_ext(const std::string& ext) {
  if (ext.empty() || ext[0] == '.') return ext;
  return "." + ext;
}

}  // namespace kg::data
