// Building a table from a source: the classes of the training table, then one Row (or one BadRow) per
// CSV row, with its image path resolved inside data.root and its targets parsed for the task.
#include "data/table.h"

#include <algorithm>
#include <filesystem>
#include <set>

#include "core/error.h"
#include "core/strings.h"
#include "data/csv.h"
#include "data/source.h"
#include "data/pack.h"

namespace fs = std::filesystem;

namespace kg::data {
namespace {

// Where a path from the CSV lands, or a reason it must not be read.
std::string resolve_image(const DataOptions& o, const TableSource& s, const std::string& rel, std::string& reason) {
  const fs::path root = fs::path(o.root.empty() ? "." : o.root).lexically_normal();
  fs::path relp(rel);
  if (relp.is_absolute()) {
    reason = "path \"" + rel + "\" is absolute; image paths must lie under data.root";
    return "";
  }
  fs::path full = (fs::path(data_path(o, s.image_dir)) / relp).lexically_normal();
  // Lexically outside the root ("../x.png"): never read.
  auto r = full.lexically_relative(root);
  if (r.empty() || *r.begin() == "..") {
    reason = "path \"" + rel + "\" leaves data.root (" + o.root + ")";
    return "";
  }
  // A symlink that escapes the root is refused too.
  std::error_code ec;
  if (fs::exists(full, ec)) {
    auto canon = fs::canonical(full, ec);
    auto croot = fs::canonical(root, ec);
    if (!ec) {
      auto cr = canon.lexically_relative(croot);
      if (cr.empty() || *cr.begin() == "..") {
        reason = "path \"" + rel + "\" resolves (through a link) to " + canon.string() + ", outside data.root";
        return "";
      }
    }
  }
  return full.string();
}

}  // namespace

ClassList infer_classes(const DataOptions& o, const TableSource& src) {
  const CsvTable& csv = *src.csv;
  KG_CHECK(!csv.rows.empty(), DataError, csv.path, " has no rows");
  ClassList c;
  c.task = o.task;
  auto cols = require_columns(csv, src.label_cols, "data.label_cols");
  if (c.task == Task::regression) {
    c.names = src.label_cols;
    c.numeric = false;
    return c;
  }
  if (c.task == Task::multilabel) {
    c.numeric = false;
    if (cols.size() > 1) {
      c.names = src.label_cols;  // one 0/1 column per label, in the recipe's order
      return c;
    }
    std::set<std::string> names;
    for (auto& r : csv.rows)
      for (auto& n : cell_names(r[static_cast<size_t>(cols[0])], o.label_sep)) names.insert(n);
    KG_CHECK(static_cast<int64_t>(names.size()) <= o.max_classes, DataError, csv.path, " column ", src.label_cols[0],
             " names ", names.size(), " distinct labels, more than data.max_classes = ", o.max_classes,
             ": is it the right column (data.label_cols) and separator (data.label_sep = \"", o.label_sep,
             "\")? Raise data.max_classes if the labels are real");
    c.names.assign(names.begin(), names.end());
    KG_CHECK(!c.names.empty(), DataError, csv.path, " column ", src.label_cols[0], " holds no label names");
    KG_CHECK(!o.num_classes || *o.num_classes == c.size(), DataError, "data.num_classes = ", *o.num_classes, " but ",
             csv.path, " column ", src.label_cols[0], " names ", c.size(), " labels: ", join(c.names, ", "));
    return c;
  }
  KG_CHECK(cols.size() == 1, ConfigError, "data.label_cols: a ", task_name(o.task),
           " task takes one label column, got ", cols.size(), " (", join(src.label_cols, ", "), ")");
  std::set<std::string> strings;
  int64_t max_int = -1;
  bool numeric = true;
  for (auto& r : csv.rows) {
    std::string v = trim(r[static_cast<size_t>(cols[0])]);
    if (v.empty()) continue;  // reported per row when the table is built
    // Integer labels keep their values; negative ones are reported per row as out of range.
    auto i = cell_int(v);
    if (!i)
      numeric = false;
    else
      max_int = std::max(max_int, *i);
    strings.insert(v);
  }
  c.numeric = numeric;
  if (numeric) {
    // Checked before max_int + 1 is formed: a label of 2^63 - 1 would overflow it.
    KG_CHECK(c.task == Task::binary || (o.num_classes ? *o.num_classes <= o.max_classes : max_int < o.max_classes),
             DataError, csv.path, " column ", src.label_cols[0], ": integer labels name classes 0, 1, 2, ... and ",
             o.num_classes ? "data.num_classes = " + std::to_string(*o.num_classes) + " asks for more of them"
                           : "its largest label, " + std::to_string(max_int) + ", asks for more of them",
             " than data.max_classes = ", o.max_classes,
             ". An id, or a number to predict (data.task = \"regression\")? Raise data.max_classes if the classes are "
             "real");
    int64_t n = o.num_classes ? *o.num_classes : max_int + 1;
    if (c.task == Task::binary) n = 2;
    for (int64_t k = 0; k < n; ++k) c.names.push_back(std::to_string(k));
  } else {
    KG_CHECK(static_cast<int64_t>(strings.size()) <= o.max_classes, DataError, csv.path, " column ", src.label_cols[0],
             " holds ", strings.size(), " distinct labels, more than data.max_classes = ", o.max_classes,
             ": is it the label column (data.label_cols)? Raise data.max_classes if the classes are real");
    c.names.assign(strings.begin(), strings.end());
    KG_CHECK(!o.num_classes || *o.num_classes == c.size(), DataError, "data.num_classes = ", *o.num_classes, " but ",
             csv.path, " column ", src.label_cols[0], " holds ", c.size(), " distinct labels: ", join(c.names, ", "));
  }
  KG_CHECK(c.size() >= 2, DataError, csv.path, " column ", src.label_cols[0], " holds fewer than 2 classes");
  KG_CHECK(c.task != Task::binary || c.size() == 2, DataError, "data.task = \"binary\" but ", csv.path, " column ",
           src.label_cols[0], " holds ", c.size(), " classes: ", join(c.names, ", "), " (use multiclass)");
  return c;
}

// The offset of the first byte that does not belong to a well-formed UTF-8 sequence (overlong forms, surrogates and
// code points past U+10FFFF included); npos when there is none.
size_t invalid_utf8_at(const std::string& s) {
  const auto* p = reinterpret_cast<const unsigned char*>(s.data());
  const size_t n = s.size();
  for (size_t i = 0; i < n;) {
    const unsigned c = p[i];
    size_t len = 0;
    unsigned lo = 0x80, hi = 0xBF;  // the second byte's range (narrower after E0, ED, F0, F4)
    if (c < 0x80) {
      ++i;
      continue;
    } else if (c >= 0xC2 && c <= 0xDF) {
      len = 2;
    } else if (c >= 0xE0 && c <= 0xEF) {
      len = 3;
      if (c == 0xE0) lo = 0xA0;
      if (c == 0xED) hi = 0x9F;
    } else if (c >= 0xF0 && c <= 0xF4) {
      len = 4;
      if (c == 0xF0) lo = 0x90;
      if (c == 0xF4) hi = 0x8F;
    } else {
      return i;
    }
    if (i + len > n || p[i + 1] < lo || p[i + 1] > hi) return i;
    for (size_t k = 2; k < len; ++k)
      if ((p[i + k] & 0xC0) != 0x80) return i;
    i += len;
  }
  return std::string::npos;
}

Table build_table(const DataOptions& o, const TableSource& src, const ClassList* classes, bool require_labels,
                  std::vector<BadRow>& bad) {
  const CsvTable& csv = *src.csv;
  Table t;
  t.csv_path = csv.path;
  t.task = o.task;
  t.pack = src.pack;
  t.max_image_pixels = o.max_image_pixels;
  int id_col = csv.require_column(src.id_col, "data.id_col");
  int path_col = src.path_col.empty() ? -1 : csv.require_column(src.path_col, "data.path_col");
  std::vector<int> label_cols;
  bool have_labels = classes != nullptr;
  for (const auto& n : src.label_cols) have_labels = have_labels && csv.column(n) >= 0;
  if (require_labels && !have_labels)
    require_columns(csv, src.label_cols, "data.label_cols");  // throws, naming the column
  if (have_labels) label_cols = require_columns(csv, src.label_cols, "data.label_cols");
  auto feature_cols = require_columns(csv, o.feature_cols, "data.feature_cols");
  const bool text = is_text(o);
  const auto text_cols = text ? require_columns(csv, o.text_cols, "data.text_cols") : std::vector<int>();
  t.text_dim = static_cast<int64_t>(text_cols.size());
  for (const auto& k : src.keep_cols) {
    int c = csv.require_column(k, "cv");
    auto& col = t.columns[k];
    for (const auto& r : csv.rows) col.push_back(r[static_cast<size_t>(c)]);
  }
  t.feature_dim = static_cast<int64_t>(feature_cols.size());
  if (have_labels && t.task != Task::multiclass) t.value_dim = t.task == Task::binary ? 1 : classes->size();
  if (src.pack)
    KG_CHECK(src.pack->size() == static_cast<int64_t>(csv.rows.size()), DataError, src.pack->path(), " holds ",
             src.pack->size(), " images but its table has ", csv.rows.size(), " rows; the pack is damaged");

  std::set<std::string> seen;
  for (size_t i = 0; i < csv.rows.size(); ++i) {
    const auto& r = csv.rows[i];
    Row row;
    row.id = r[static_cast<size_t>(id_col)];
    row.csv_row = static_cast<int64_t>(i + 1);
    row.where = csv.where(i + 1);
    std::vector<std::string> problems;
    if (trim(row.id).empty())
      problems.push_back("empty id");
    else if (!seen.insert(row.id).second)
      problems.push_back("duplicate id \"" + row.id + "\"");
    if (text) {
      for (size_t k = 0; k < text_cols.size(); ++k) {
        std::string cell = r[static_cast<size_t>(text_cols[k])];
        const size_t bad_at = invalid_utf8_at(cell);
        if (bad_at != std::string::npos) {
          problems.push_back("text " + o.text_cols[k] + " is not UTF-8 (byte " + std::to_string(bad_at) +
                             "): save the table as UTF-8");
          cell.clear();
        } else if (trim(cell).empty()) {
          problems.push_back("empty text in " + o.text_cols[k]);
        }
        t.texts.push_back(std::move(cell));
      }
    } else if (src.pack) {
      row.item = static_cast<int64_t>(i);
    } else {
      std::string rel = path_col >= 0 ? r[static_cast<size_t>(path_col)] : row.id + normalized_ext(o.image_ext);
      std::string reason;
      if (trim(rel).empty())
        reason = "empty image path";
      else
        row.image = resolve_image(o, src, rel, reason);
      if (!reason.empty()) problems.push_back(reason);
    }
    // Targets.
    int64_t target = -1;
    std::vector<float> vals;
    if (have_labels) {
      if (t.task == Task::multiclass || t.task == Task::binary) {
        const std::string& label = r[static_cast<size_t>(label_cols[0])];
        auto k = classes->index_of(label);
        if (!k)
          problems.push_back("label \"" + label + "\" is not one of the " + std::to_string(classes->size()) +
                             " classes" +
                             (classes->numeric ? " (0.." + std::to_string(classes->size() - 1) + ")"
                                               : " (" + join(classes->names, ", ") + ")"));
        target = k.value_or(-1);
        if (t.task == Task::binary) vals.push_back(target == 1 ? 1.0f : 0.0f);
      } else if (t.task == Task::multilabel && label_cols.size() == 1) {
        vals.assign(static_cast<size_t>(classes->size()), 0.0f);
        for (auto& n : cell_names(r[static_cast<size_t>(label_cols[0])], o.label_sep)) {
          auto it = std::lower_bound(classes->names.begin(), classes->names.end(), n);
          if (it == classes->names.end() || *it != n)
            problems.push_back("label \"" + n + "\" is not one of the known labels");
          else
            vals[static_cast<size_t>(it - classes->names.begin())] = 1.0f;
        }
      } else {
        for (size_t k = 0; k < label_cols.size(); ++k) {
          const std::string& cell = r[static_cast<size_t>(label_cols[k])];
          auto v = t.task == Task::multilabel ? cell_flag(cell) : cell_float(cell);
          if (!v)
            problems.push_back(std::string(t.task == Task::multilabel ? "label column " : "target ") +
                               src.label_cols[k] + " = \"" + cell + "\" is not " +
                               (t.task == Task::multilabel ? "0 or 1" : "a finite number"));
          vals.push_back(v.value_or(0.0f));
        }
      }
    }
    for (size_t k = 0; k < feature_cols.size(); ++k) {
      const std::string& cell = r[static_cast<size_t>(feature_cols[k])];
      auto v = cell_float(cell);
      if (!v) problems.push_back("feature " + o.feature_cols[k] + " = \"" + cell + "\" is not a finite number");
      t.features.push_back(v.value_or(0.0f));
    }
    for (auto& p : problems) bad.push_back({row.csv_row, row.id, p, row.where});
    if (have_labels && t.task == Task::multiclass) t.targets.push_back(target);
    t.values.insert(t.values.end(), vals.begin(), vals.end());
    t.rows.push_back(std::move(row));
  }
  return t;
}

}  // namespace kg::data
