#include "data/source.h"

#include <algorithm>
#include <filesystem>
#include <mutex>

#include "core/error.h"
#include "core/parallel_for.h"
#include "data/image_io.h"
#include "data/loader.h"
#include "data/table_read.h"

namespace fs = std::filesystem;

namespace kg::data {

SourceRegistry& source_registry() {
  static SourceRegistry r("source");
  return r;
}

std::string data_path(const DataOptions& o, const std::string& rel) {
  fs::path p(rel);
  if (p.is_absolute()) return rel;
  return (fs::path(o.root) / p).lexically_normal().string();
}

std::string resolve_format(const DataOptions& o) {
  if (o.format != "auto") return o.format;
  std::error_code ec;
  if (table_exists(data_path(o, o.train_csv))) return "csv";
  const fs::path dir = data_path(o, o.image_dir);
  if (fs::is_directory(dir, ec))
    for (auto& e : fs::directory_iterator(dir, ec))
      if (e.is_directory()) return "folder";
  if (fs::is_regular_file(data_path(o, o.train_pack), ec)) return "pack";
  throw DataError("data.format = \"auto\" found no dataset under " + o.root + ": no " + data_path(o, o.train_csv) +
                  ", no class sub-folders in " + dir.string() + ", no " + data_path(o, o.train_pack) +
                  " (set data.root, data.train_csv or data.format)");
}

void open_source(const DataOptions& o, Split split, OpenedSource& out) {
  const std::string fmt = resolve_format(o);
  config::json empty = config::json::object();
  auto src = source_registry().create(fmt, config::Options(empty, "data.format"));
  src->open(o, split, out);
  out.src.csv = &out.csv;
}

ClassList infer_classes(const DataOptions& o) {
  OpenedSource s;
  open_source(o, Split::train, s);
  return infer_classes(o, s.src);
}

void scan_images(const Table& t, const ImageGeometry& g, int threads, std::vector<BadRow>& bad, ImageCache* fill) {
  std::mutex mu;
  parallel_for(t.rows.size(), std::max(1, threads), [&](size_t i, int) {
    const Row& r = t.rows[i];
    if (!t.pack && r.image.empty()) return;  // already bad (path refused)
    try {
      Image img = t.image(i, static_cast<int>(g.channels));
      if (fill) fill->put(static_cast<int64_t>(i), img);
    } catch (const Error& e) {
      std::lock_guard<std::mutex> lock(mu);
      bad.push_back({r.csv_row, r.id, e.what(), r.where});
    }
  });
}

Table load_split(const DataOptions& o, Split split, const ClassList& classes, bool scan, int threads,
                 const std::vector<std::string>& keep_cols, ImageCache* fill) {
  OpenedSource s;
  open_source(o, split, s);
  s.src.keep_cols = keep_cols;
  std::vector<BadRow> bad;
  Table t = build_table(o, s.src, &classes, split == Split::train, bad);
  scan = scan && !t.is_text();  // a text row's input is its cells, already checked
  if (scan) scan_images(t, geometry(o), threads, bad, fill);
  const auto moved = apply_bad_row_policy(t, std::move(bad), o.on_bad_row);
  if (scan && fill && !moved.empty()) fill->remap(moved);  // the cache's keys follow the rows that stayed
  KG_CHECK(!t.rows.empty(), DataError, t.csv_path, " has no rows");
  if (split == Split::train && !o.extra_train_csv.empty()) append_extra_rows(o, classes, t, scan, threads);
  return t;
}

namespace {
void open_csv(const DataOptions& o, const std::string& csv_rel, const std::string& image_dir, OpenedSource& out) {
  out.csv = read_table(data_path(o, csv_rel));
  out.src.csv = &out.csv;
  out.src.image_dir = image_dir;
  out.src.id_col = o.id_col;
  out.src.path_col = o.path_col;
  out.src.label_cols = o.label_cols;
}
}  // namespace

Table load_table(const DataOptions& o, const std::string& csv_rel, const std::string& image_dir,
                 const ClassList* classes, bool require_labels) {
  OpenedSource s;
  open_csv(o, csv_rel, image_dir, s);
  std::vector<BadRow> bad;
  Table t = build_table(o, s.src, classes, require_labels, bad);
  apply_bad_row_policy(t, std::move(bad), "error");
  KG_CHECK(!t.rows.empty(), DataError, t.csv_path, " has no rows");
  return t;
}

void check_images(const Table& t, const ImageGeometry& g, int threads, ImageCache* fill) {
  std::vector<BadRow> bad;
  scan_images(t, g, threads, bad, fill);
  Table copy;
  copy.csv_path = t.csv_path + " images";
  apply_bad_row_policy(copy, std::move(bad), "error");
}

namespace {

// Whether the recipe's training data is on disk (its layout may still be broken: the source says so).
bool data_present(const DataOptions& d) {
  std::string fmt;
  try {
    fmt = resolve_format(d);  // "auto" throws when it finds no layout
  } catch (const DataError&) {
    return false;
  }
  std::error_code ec;
  if (fmt == "csv") return table_exists(data_path(d, d.train_csv));
  if (fmt == "folder") return fs::is_directory(data_path(d, d.image_dir), ec);
  if (fmt == "pack") return fs::is_regular_file(data_path(d, d.train_pack), ec);
  return true;  // another source: let it read (and report) its own layout
}

// What data::infer_classes would find, from the recipe alone; 0 when the recipe does not say.
int64_t stated_classes(const DataOptions& d, Task task) {
  const auto cols = static_cast<int64_t>(d.label_cols.size());
  switch (task) {
    case Task::regression:
      return cols;  // one output per target column
    case Task::binary:
      return 2;  // two classes, one output
    case Task::multilabel:
      if (cols > 1) return cols;  // one 0/1 column per label
      return d.num_classes.value_or(0);
    case Task::multiclass:
      return d.num_classes.value_or(0);
  }
  return 0;
}

}  // namespace

RecipeClasses classes_for_model(const DataOptions& d) {
  RecipeClasses r;
  if (data_present(d)) {
    r.classes = infer_classes(d);
    r.from = "the training table under " + d.root;
    return r;
  }
  r.classes.task = d.task;
  const int64_t n = stated_classes(d, r.classes.task);
  if (n <= 0) {
    try {
      infer_classes(d);  // its own message says what is missing
    } catch (const DataError& e) {
      throw DataError(std::string(e.what()) + "; to build the model without its data, set data.num_classes");
    }
  }
  KG_CHECK(n > 0, DataError, "no training data under ", d.root, " and data.num_classes is not set");
  const bool named_columns =
      r.classes.task == Task::regression || (r.classes.task == Task::multilabel && d.label_cols.size() > 1);
  r.classes.numeric = !named_columns;
  if (named_columns)
    r.classes.names = d.label_cols;
  else
    for (int64_t k = 0; k < n; ++k) r.classes.names.push_back(std::to_string(k));
  r.from = "the recipe (no training data under " + d.root + ")";
  return r;
}

}  // namespace kg::data
