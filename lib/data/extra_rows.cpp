// data.extra_train_csv: training-only rows appended after the training table (pseudo labels written
// by `kgtrain pseudo-label`, or any extra labeled set). They never enter a validation fold.
#include <cmath>
#include <set>

#include "core/error.h"
#include "core/strings.h"
#include "data/csv.h"
#include "data/source.h"
#include "data/table.h"
#include "data/table_read.h"

namespace kg::data {

void append_extra_rows(const DataOptions& o, const ClassList& classes, Table& t, bool scan, int threads) {
  KG_CHECK(t.extra_begin < 0, DataError, "extra rows were appended twice to ", t.csv_path);
  CsvTable csv = read_table(data_path(o, o.extra_train_csv));
  // The extra images' folder is their root: ids / paths cannot leave it.
  DataOptions eo = o;
  eo.root = data_path(o, o.extra_image_dir.empty() ? o.test_image_dir : o.extra_image_dir);
  TableSource src;
  src.csv = &csv;
  src.image_dir = ".";
  src.id_col = o.id_col;
  src.path_col = o.path_col;
  src.label_cols = o.label_cols;
  std::vector<BadRow> bad;
  Table e = build_table(eo, src, &classes, /*require_labels=*/true, bad);

  // prob_<class> columns: soft targets (multiclass) or probabilities (binary: the positive class; multilabel).
  std::vector<std::string> names;
  if (classes.task == Task::binary)
    names.push_back("prob_" + classes.names[1]);
  else if (classes.task != Task::regression)
    for (auto& n : classes.names) names.push_back("prob_" + n);
  std::vector<int> pcols;
  std::vector<std::string> missing;
  for (auto& n : names) {
    int c = csv.column(n);
    (c >= 0 ? pcols.push_back(c) : missing.push_back(n));
  }
  KG_CHECK(pcols.empty() || missing.empty(), DataError, csv.path, " has probability columns but lacks ",
           join(missing, ", "), ": give one prob_<class> column per class (soft targets) or none (hard labels)");
  const size_t K = pcols.size();
  for (size_t i = 0; i < csv.rows.size() && K > 0; ++i) {
    std::vector<float> p;
    std::string problem;
    for (size_t j = 0; j < K; ++j) {
      const std::string& cell = csv.rows[i][static_cast<size_t>(pcols[j])];
      char* end = nullptr;
      double v = std::strtod(cell.c_str(), &end);
      if (cell.empty() || *end != '\0' || !std::isfinite(v) || v < 0 || v > 1) {
        problem = names[j] + " = \"" + cell + "\" is not a probability in [0, 1]";
        break;
      }
      p.push_back(static_cast<float>(v));
    }
    if (problem.empty() && classes.task == Task::multiclass) {
      double sum = 0;
      for (float v : p) sum += v;
      if (std::abs(sum - 1.0) > 1e-3) problem = "prob_ columns sum to " + std::to_string(sum) + ", not 1";
    }
    if (!problem.empty()) {
      bad.push_back({e.rows[i].csv_row, e.rows[i].id, problem, e.rows[i].where});
      p.assign(K, 0.0f);
    }
    if (classes.task == Task::multiclass)
      e.soft.insert(e.soft.end(), p.begin(), p.end());
    else
      std::copy(p.begin(), p.end(), e.values.begin() + static_cast<std::ptrdiff_t>(i * K));
  }
  std::set<std::string> ids;
  for (auto& r : t.rows) ids.insert(r.id);
  for (auto& r : e.rows)
    if (ids.count(r.id)) bad.push_back({r.csv_row, r.id, "id \"" + r.id + "\" is also a training row", r.where});
  if (scan && !e.is_text()) scan_images(e, geometry(o), threads, bad);
  e.extra_begin = 0;  // so filter() keeps `soft` aligned with the rows
  apply_bad_row_policy(e, std::move(bad), o.on_bad_row);
  KG_CHECK(!e.rows.empty(), DataError, csv.path, " (data.extra_train_csv) has no usable rows");

  t.extra_begin = t.size();
  for (auto& r : e.rows) r.item = -1;  // loose files, also beside a packed training table
  t.rows.insert(t.rows.end(), e.rows.begin(), e.rows.end());
  t.targets.insert(t.targets.end(), e.targets.begin(), e.targets.end());
  t.values.insert(t.values.end(), e.values.begin(), e.values.end());
  t.features.insert(t.features.end(), e.features.begin(), e.features.end());
  t.texts.insert(t.texts.end(), std::make_move_iterator(e.texts.begin()), std::make_move_iterator(e.texts.end()));
  t.soft = std::move(e.soft);
  for (auto& [name, col] : t.columns) col.resize(t.rows.size());  // fold columns: extra rows have none (fold -1)
  for (auto& d : e.dropped) {
    d.reason = "data.extra_train_csv " + d.where + ": " + d.reason;
    t.dropped.push_back(d);
  }
}

}  // namespace kg::data
