// A competition table: one row per image, with its id, where its pixels live, and (when labeled) its
// targets in the form the task needs. Sources (lib/data/sources/) build tables from a CSV + image
// folder, a folder-per-class layout or a packed file; the bad-row policy is applied here.
#pragma once
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>
#include "data/image.h"
#include "data/image_header.h"

#include "data/options.h"

namespace kg::data {

class PackReader;
class ImageCache;  // data/loader.h
struct CsvTable;

using kg::parse_task;  // core/tasks.h: Task, its names
using kg::Task;
using kg::task_name;

// The model's outputs, named. multiclass: the classes (integer labels keep their values "0".."9";
// string labels are sorted and predictions are written back with the same spelling); binary: the
// two classes, the model predicting the second; multilabel: the labels; regression: the target columns.
struct ClassList {
  std::vector<std::string> names;
  bool numeric = true;
  Task task = Task::multiclass;

  int64_t size() const { return static_cast<int64_t>(names.size()); }
  // Model outputs: one per class/label/target, one for binary.
  int64_t outputs() const { return task == Task::binary ? 1 : size(); }
  std::optional<int64_t> index_of(const std::string& label) const;
  nlohmann::json to_json() const;
  static ClassList from_json(const nlohmann::json& j);  // CheckpointError when malformed
};

struct Row {
  std::string id;       // exactly as in the CSV (or the relative path, for folder layouts)
  std::string image;    // path of the image file ("" for packed items)
  std::string where;    // "train.csv row 17 (line 18)" for messages
  int64_t csv_row = 0;  // 1-based data row of the source table
  int64_t item = -1;    // item index in the pack (packed sources)
};

// A row that cannot be used, and why.
struct BadRow {
  int64_t csv_row = 0;
  std::string id;
  std::string reason;
  std::string where;
};

struct Table {
  std::string csv_path;
  std::vector<Row> rows;
  Task task = Task::multiclass;
  std::vector<int64_t> targets;  // multiclass: class index per row; empty when the table has no labels
  std::vector<float> values;     // other tasks: value_dim floats per row (0/1 labels or regression targets)
  int64_t value_dim = 0;
  std::vector<float> features;  // data.feature_cols: feature_dim floats per row
  int64_t feature_dim = 0;
  std::vector<std::string> texts;  // data.text_cols: text_dim texts per row (valid UTF-8); empty for image tables
  int64_t text_dim = 0;
  std::shared_ptr<const PackReader> pack;                   // set for packed sources
  int64_t max_image_pixels = kDefaultMaxImagePixels;        // data.max_image_pixels: every decode of its images
  std::map<std::string, std::vector<std::string>> columns;  // kept CSV columns (cv.group_col, cv.fold_col)
  std::vector<BadRow> dropped;                              // rows removed under data.on_bad_row = "skip"
  // data.extra_train_csv: rows [extra_begin, size()) train only (fold -1); -1 = none. Multiclass soft
  // targets of those rows (K floats per extra row, prob_<class> columns) in `soft`; empty = hard labels.
  int64_t extra_begin = -1;
  std::vector<float> soft;

  bool is_extra(int64_t row) const { return extra_begin >= 0 && row >= extra_begin; }
  int64_t base_size() const { return extra_begin >= 0 ? extra_begin : size(); }
  bool labeled() const { return !targets.empty() || !values.empty(); }
  int64_t size() const { return static_cast<int64_t>(rows.size()); }
  bool is_text() const { return text_dim > 0; }
  // The row's text of data.text_cols[k].
  const std::string& text(int64_t row, int64_t k = 0) const { return texts[static_cast<size_t>(row * text_dim + k)]; }
  // The row's image as 8-bit RGB or gray with `channels` channels; DataError when unreadable.
  Image image(size_t row, int channels) const;
  // The label used to balance folds: the class (multiclass, binary), the rarest present label
  // (multilabel; K for none), a quantile bin of the first target (regression); -1 when unlabeled.
  std::vector<int64_t> strata(int bins = 10) const;
  // Keeps the rows whose keep[i] is true (targets and features follow).
  void filter(const std::vector<bool>& keep);
};

// The parts of a source a table is built from.
struct TableSource {
  const CsvTable* csv = nullptr;
  std::string image_dir;  // relative to data.root (loose files)
  std::string id_col, path_col;
  std::vector<std::string> label_cols;
  std::shared_ptr<const PackReader> pack;  // item i = data row i
  std::vector<std::string> keep_cols;      // columns copied into Table::columns (must exist)
};

// Classes / labels / targets from the training table, checked against data.num_classes.
ClassList infer_classes(const DataOptions& o, const TableSource& src);

// The byte offset of the first byte of `s` that is not part of well-formed UTF-8; npos when all of it is.
size_t invalid_utf8_at(const std::string& s);

// Builds a table. With `classes`, its label columns (when present, or required) are parsed for the
// task; every bad row (unknown or out-of-range label, non-numeric target, empty or duplicate id,
// a path outside data.root) is collected in `bad`, not thrown.
Table build_table(const DataOptions& o, const TableSource& src, const ClassList* classes, bool require_labels,
                  std::vector<BadRow>& bad);

// Decodes every image once with `threads` threads and adds each missing, empty or undecodable one to `bad`.
// With `fill`, each decoded image goes into that cache under its row of `t` (up to the cache's cap).
void scan_images(const Table& t, const ImageGeometry& g, int threads, std::vector<BadRow>& bad,
                 ImageCache* fill = nullptr);

// data.on_bad_row: "error" throws one DataError listing every bad row (exit 3); "skip" removes them
// from the table into t.dropped. "required" (set by jobs, not recipes: every test row needs a
// prediction) is "error" without the hint to skip.
// Returns where each row went (new_of_old[r], -1 when dropped); empty when no row was dropped.
std::vector<int64_t> apply_bad_row_policy(Table& t, std::vector<BadRow> bad, const std::string& policy);

// bad_rows.csv: header row,id,reason; ids exactly as in the CSV.
std::string bad_rows_csv(const std::vector<BadRow>& bad);

// --- the recipe's sources (data.format) -----------------------------------------------------------

enum class Split { train, test };

// The classes of the recipe's training data (any source).
ClassList infer_classes(const DataOptions& o);

// The split's table from the recipe's source, images scanned with `threads` threads when
// `scan` and the bad-row policy applied. Test tables are labeled when their CSV has the label columns.
// With `fill` (data.cache = "ram"), the scan's decoded images go into the cache under their final
// row numbers, so the first epoch does not decode them again.
Table load_split(const DataOptions& o, Split split, const ClassList& classes, bool scan, int threads,
                 const std::vector<std::string>& keep_cols = {}, ImageCache* fill = nullptr);

// Compatibility for CSV tables (tests, tools): the CSV at `csv_rel` with images in `image_dir`,
// bad rows fatal (DataError listing all of them).
Table load_table(const DataOptions& o, const std::string& csv_rel, const std::string& image_dir,
                 const ClassList* classes, bool require_labels);

// data.extra_train_csv: appends its rows (labels parsed for `classes`' task; prob_<class> columns give
// multiclass soft targets, binary/multilabel probabilities) after the training rows, sets extra_begin.
// Bad extra rows follow data.on_bad_row; an extra id equal to a training id is a bad row.
void append_extra_rows(const DataOptions& o, const ClassList& classes, Table& t, bool scan, int threads);

// Decodes every image; DataError listing every missing or damaged one. With `fill`, the decoded
// images go into that cache (keyed by the rows of `t`).
void check_images(const Table& t, const ImageGeometry& g, int threads, ImageCache* fill = nullptr);

}  // namespace kg::data
