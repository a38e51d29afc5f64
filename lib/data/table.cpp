#include "data/table.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <filesystem>
#include <set>

#include "core/error.h"
#include "core/strings.h"
#include "data/csv.h"
#include "data/image_io.h"
#include "data/pack.h"

namespace fs = std::filesystem;

namespace kg::data {
namespace {

std::optional<int64_t> parse_int(const std::string& s) {
  int64_t v = 0;
  auto t = trim(s);
  auto r = std::from_chars(t.data(), t.data() + t.size(), v);
  if (r.ec != std::errc() || r.ptr != t.data() + t.size() || t.empty()) return std::nullopt;
  return v;
}

std::optional<float> parse_float(const std::string& s) {
  auto t = trim(s);
  if (t.empty()) return std::nullopt;
  char* end = nullptr;
  errno = 0;
  double v = std::strtod(t.c_str(), &end);
  if (end != t.c_str() + t.size() || errno == ERANGE || !std::isfinite(v)) return std::nullopt;
  const float f = static_cast<float>(v);
  if (!std::isfinite(f)) return std::nullopt;  // 1e40 is a finite double but no float
  return f;
}

// A multi-label indicator: 0/1 (also 0.0/1.0, true/false).
std::optional<float> parse_flag(const std::string& s) {
  auto t = trim(s);
  if (t == "1" || t == "1.0" || t == "true" || t == "True") return 1.0f;
  if (t == "0" || t == "0.0" || t == "false" || t == "False") return 0.0f;
  return std::nullopt;
}

std::vector<std::string> split_names(const std::string& cell, const std::string& sep) {
  std::vector<std::string> out;
  std::string s = trim(cell);
  size_t i = 0;
  while (i <= s.size()) {
    size_t j = sep.empty() ? std::string::npos : s.find(sep, i);
    if (j == std::string::npos) j = s.size();
    std::string tok = trim(std::string_view(s).substr(i, j - i));
    if (!tok.empty()) out.push_back(tok);
    i = j + std::max<size_t>(1, sep.size());
  }
  return out;
}

std::vector<int> columns(const CsvTable& csv, const std::vector<std::string>& names, const char* key) {
  std::vector<int> out;
  for (const auto& n : names) out.push_back(csv.require_column(n, key));
  return out;
}

// Lists up to 20 problems and the count of the rest: enough to fix a CSV in one pass.
std::string list_rows(const std::string& what, const std::vector<BadRow>& bad) {
  std::string msg = what + ": " + std::to_string(bad.size()) + " bad row(s)";
  for (size_t i = 0; i < bad.size() && i < 20; ++i)
    msg += "\n  - " + bad[i].where + ": id " + bad[i].id + ": " + bad[i].reason;
  if (bad.size() > 20) msg += "\n  ... and " + std::to_string(bad.size() - 20) + " more";
  return msg;
}

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

Task parse_task(const std::string& name) {
  if (name == "multilabel") return Task::multilabel;
  if (name == "binary") return Task::binary;
  if (name == "regression") return Task::regression;
  KG_CHECK(name == "multiclass", ConfigError, "data.task: unknown task \"", name,
           "\" (known: multiclass, multilabel, binary, regression)");
  return Task::multiclass;
}

const char* task_name(Task t) {
  switch (t) {
    case Task::multilabel:
      return "multilabel";
    case Task::binary:
      return "binary";
    case Task::regression:
      return "regression";
    default:
      return "multiclass";
  }
}

std::optional<int64_t> ClassList::index_of(const std::string& label) const {
  if (numeric) {
    auto v = parse_int(label);
    if (!v || *v < 0 || *v >= size()) return std::nullopt;
    return *v;
  }
  auto t = trim(label);
  auto it = std::lower_bound(names.begin(), names.end(), t);
  if (it == names.end() || *it != t) return std::nullopt;
  return it - names.begin();
}

nlohmann::json ClassList::to_json() const {
  return {{"numeric", numeric}, {"names", names}, {"task", task_name(task)}};
}

ClassList ClassList::from_json(const nlohmann::json& j) {
  ClassList c;
  try {
    c.numeric = j.at("numeric").get<bool>();
    c.names = j.at("names").get<std::vector<std::string>>();
    c.task = j.contains("task") ? parse_task(j.at("task").get<std::string>()) : Task::multiclass;
  } catch (const std::exception& e) {
    throw CheckpointError(std::string("class list is malformed: ") + e.what());
  }
  return c;
}

Image Table::image(size_t row, int channels) const {
  const Row& r = rows[row];
  if (pack && r.item >= 0) return pack->image(r.item, channels);  // extra rows of a packed table are loose files
  return decode_image(r.image, channels);
}

std::vector<int64_t> Table::strata(int bins) const {
  std::vector<int64_t> s(rows.size(), -1);
  if (!labeled()) return s;
  if (task == Task::multiclass) return targets;
  const size_t n = rows.size(), d = static_cast<size_t>(value_dim);
  if (task == Task::binary) {
    for (size_t i = 0; i < n; ++i) s[i] = values[i] > 0.5f ? 1 : 0;
  } else if (task == Task::multilabel) {
    // Stratify by each row's rarest label, so rare labels spread over every fold.
    std::vector<int64_t> count(d, 0);
    for (size_t i = 0; i < n; ++i)
      for (size_t k = 0; k < d; ++k) count[k] += values[i * d + k] > 0.5f;
    for (size_t i = 0; i < n; ++i) {
      int64_t best = static_cast<int64_t>(d);  // no label at all
      for (size_t k = 0; k < d; ++k)
        if (values[i * d + k] > 0.5f &&
            (best == static_cast<int64_t>(d) || count[k] < count[static_cast<size_t>(best)]))
          best = static_cast<int64_t>(k);
      s[i] = best;
    }
  } else {
    // Regression: quantile bins of the first target (the usual Kaggle practice).
    std::vector<size_t> order(n);
    for (size_t i = 0; i < n; ++i) order[i] = i;
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return values[a * d] < values[b * d]; });
    const size_t nb = std::max<size_t>(1, std::min<size_t>(static_cast<size_t>(bins), n));
    for (size_t k = 0; k < n; ++k) s[order[k]] = static_cast<int64_t>(k * nb / n);
  }
  return s;
}

void Table::filter(const std::vector<bool>& keep) {
  const size_t d = static_cast<size_t>(value_dim), f = static_cast<size_t>(feature_dim);
  const size_t eb = extra_begin >= 0 ? static_cast<size_t>(extra_begin) : rows.size();
  const size_t sk = soft.empty() ? 0 : soft.size() / (rows.size() - eb);  // soft targets per extra row
  size_t out = 0, kept_base = 0, out_soft = 0;
  for (size_t i = 0; i < rows.size(); ++i) {
    if (!keep[i]) continue;
    if (i < eb) ++kept_base;
    if (sk && i >= eb) {
      std::copy_n(soft.begin() + static_cast<std::ptrdiff_t>((i - eb) * sk), sk,
                  soft.begin() + static_cast<std::ptrdiff_t>(out_soft * sk));
      ++out_soft;
    }
    if (out != i) rows[out] = std::move(rows[i]);
    if (!targets.empty()) targets[out] = targets[i];
    if (!values.empty())
      std::copy_n(values.begin() + static_cast<std::ptrdiff_t>(i * d), d,
                  values.begin() + static_cast<std::ptrdiff_t>(out * d));
    if (!features.empty())
      std::copy_n(features.begin() + static_cast<std::ptrdiff_t>(i * f), f,
                  features.begin() + static_cast<std::ptrdiff_t>(out * f));
    ++out;
  }
  for (auto& [name, col] : columns) {
    size_t o2 = 0;
    for (size_t i = 0; i < col.size(); ++i)
      if (keep[i]) {
        if (o2 != i) col[o2] = std::move(col[i]);
        ++o2;
      }
    col.resize(o2);
  }
  rows.resize(out);
  if (extra_begin >= 0) extra_begin = static_cast<int64_t>(kept_base);
  if (sk) soft.resize(out_soft * sk);
  if (!targets.empty()) targets.resize(out);
  if (!values.empty()) values.resize(out * d);
  if (!features.empty()) features.resize(out * f);
}

ClassList infer_classes(const DataOptions& o, const TableSource& src) {
  const CsvTable& csv = *src.csv;
  KG_CHECK(!csv.rows.empty(), DataError, csv.path, " has no rows");
  ClassList c;
  c.task = parse_task(o.task);
  auto cols = columns(csv, src.label_cols, "data.label_cols");
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
      for (auto& n : split_names(r[static_cast<size_t>(cols[0])], o.label_sep)) names.insert(n);
    c.names.assign(names.begin(), names.end());
    KG_CHECK(!c.names.empty(), DataError, csv.path, " column ", src.label_cols[0], " holds no label names");
    KG_CHECK(!o.num_classes || *o.num_classes == c.size(), DataError, "data.num_classes = ", *o.num_classes, " but ",
             csv.path, " column ", src.label_cols[0], " names ", c.size(), " labels: ", join(c.names, ", "));
    return c;
  }
  KG_CHECK(cols.size() == 1, ConfigError, "data.label_cols: a ", o.task, " task takes one label column, got ",
           cols.size(), " (", join(src.label_cols, ", "), ")");
  std::set<std::string> strings;
  int64_t max_int = -1;
  bool numeric = true;
  for (auto& r : csv.rows) {
    std::string v = trim(r[static_cast<size_t>(cols[0])]);
    if (v.empty()) continue;  // reported per row when the table is built
    // Integer labels keep their values; negative ones are reported per row as out of range.
    auto i = parse_int(v);
    if (!i)
      numeric = false;
    else
      max_int = std::max(max_int, *i);
    strings.insert(v);
  }
  c.numeric = numeric;
  if (numeric) {
    int64_t n = o.num_classes ? *o.num_classes : max_int + 1;
    if (c.task == Task::binary) n = 2;
    for (int64_t k = 0; k < n; ++k) c.names.push_back(std::to_string(k));
  } else {
    c.names.assign(strings.begin(), strings.end());
    KG_CHECK(!o.num_classes || *o.num_classes == c.size(), DataError, "data.num_classes = ", *o.num_classes, " but ",
             csv.path, " column ", src.label_cols[0], " holds ", c.size(), " distinct labels: ", join(c.names, ", "));
  }
  KG_CHECK(c.size() >= 2, DataError, csv.path, " column ", src.label_cols[0], " holds fewer than 2 classes");
  KG_CHECK(c.task != Task::binary || c.size() == 2, DataError, "data.task = \"binary\" but ", csv.path, " column ",
           src.label_cols[0], " holds ", c.size(), " classes: ", join(c.names, ", "), " (use multiclass)");
  return c;
}

Table build_table(const DataOptions& o, const TableSource& src, const ClassList* classes, bool require_labels,
                  std::vector<BadRow>& bad) {
  const CsvTable& csv = *src.csv;
  Table t;
  t.csv_path = csv.path;
  t.task = parse_task(o.task);
  t.pack = src.pack;
  int id_col = csv.require_column(src.id_col, "data.id_col");
  int path_col = src.path_col.empty() ? -1 : csv.require_column(src.path_col, "data.path_col");
  std::vector<int> label_cols;
  bool have_labels = classes != nullptr;
  for (const auto& n : src.label_cols) have_labels = have_labels && csv.column(n) >= 0;
  if (require_labels && !have_labels) columns(csv, src.label_cols, "data.label_cols");  // throws, naming the column
  if (have_labels) label_cols = columns(csv, src.label_cols, "data.label_cols");
  auto feature_cols = columns(csv, o.feature_cols, "data.feature_cols");
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
    if (src.pack) {
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
        for (auto& n : split_names(r[static_cast<size_t>(label_cols[0])], o.label_sep)) {
          auto it = std::lower_bound(classes->names.begin(), classes->names.end(), n);
          if (it == classes->names.end() || *it != n)
            problems.push_back("label \"" + n + "\" is not one of the known labels");
          else
            vals[static_cast<size_t>(it - classes->names.begin())] = 1.0f;
        }
      } else {
        for (size_t k = 0; k < label_cols.size(); ++k) {
          const std::string& cell = r[static_cast<size_t>(label_cols[k])];
          auto v = t.task == Task::multilabel ? parse_flag(cell) : parse_float(cell);
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
      auto v = parse_float(cell);
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

std::vector<int64_t> apply_bad_row_policy(Table& t, std::vector<BadRow> bad, const std::string& policy) {
  if (bad.empty()) return {};
  std::stable_sort(bad.begin(), bad.end(), [](const BadRow& a, const BadRow& b) { return a.csv_row < b.csv_row; });
  // One entry per bad row, even when a row has several problems.
  std::vector<BadRow> merged;
  for (auto& b : bad) {
    if (!merged.empty() && merged.back().csv_row == b.csv_row)
      merged.back().reason += "; " + b.reason;
    else
      merged.push_back(b);
  }
  if (policy == "required")
    throw DataError(list_rows(t.csv_path, merged) + "\n(fix the rows: every row of this table needs a prediction)");
  if (policy != "skip")
    throw DataError(
        list_rows(t.csv_path, merged) +
        "\n(fix the rows, or set data.on_bad_row = \"skip\" to train without them and list them in bad_rows.csv)");
  std::set<int64_t> drop;
  for (auto& b : merged) drop.insert(b.csv_row);
  std::vector<bool> keep(t.rows.size());
  std::vector<int64_t> new_of_old(t.rows.size(), -1);
  int64_t kept = 0;
  for (size_t i = 0; i < t.rows.size(); ++i) {
    keep[i] = !drop.count(t.rows[i].csv_row);
    if (keep[i]) new_of_old[i] = kept++;
  }
  t.filter(keep);
  t.dropped.insert(t.dropped.end(), merged.begin(), merged.end());
  KG_CHECK(!t.rows.empty(), DataError, t.csv_path, ": every row is bad; nothing left to use\n",
           list_rows(t.csv_path, merged));
  return new_of_old;
}

std::string bad_rows_csv(const std::vector<BadRow>& bad) {
  std::string out = csv_line({"row", "id", "reason"});
  for (auto& b : bad) out += csv_line({std::to_string(b.csv_row), b.id, b.reason});
  return out;
}

}  // namespace kg::data
