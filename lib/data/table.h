// A competition table: one row per image, with its id, image path and (when labeled) class index.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "data/options.h"

namespace kg::data {

// The classes of a multiclass task. Integer labels keep their values ("0".."9"); string labels are
// sorted, and predictions are written back with the same spelling.
struct ClassList {
  std::vector<std::string> names;
  bool numeric = true;

  int64_t size() const { return static_cast<int64_t>(names.size()); }
  std::optional<int64_t> index_of(const std::string& label) const;
  nlohmann::json to_json() const;
  static ClassList from_json(const nlohmann::json& j);  // DataError when malformed
};

struct Row {
  std::string id;
  std::string image;   // path of the image file
  std::string where;   // "train.csv row 17 (line 18)" for messages
};

struct Table {
  std::string csv_path;
  std::vector<Row> rows;
  std::vector<int64_t> targets;  // class index per row; empty when the table has no labels
  bool labeled() const { return !targets.empty(); }
  int64_t size() const { return static_cast<int64_t>(rows.size()); }
};

// Classes from the training table's label column, checked against data.num_classes.
ClassList infer_classes(const DataOptions& o);

// Reads a table. With `classes`, its label column (when present, or required) is mapped to indices;
// every bad row (unknown label, empty id, duplicate id) is reported at once in one DataError.
Table load_table(const DataOptions& o, const std::string& csv_rel, const std::string& image_dir,
                 const ClassList* classes, bool require_labels);

// Decodes every image once with `threads` threads; DataError listing every missing or damaged one.
void check_images(const Table& t, const ImageGeometry& g, int threads);

}  // namespace kg::data
