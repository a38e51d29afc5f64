#include "data/table.h"

#include <algorithm>
#include <atomic>
#include <charconv>
#include <mutex>
#include <set>
#include <thread>

#include "core/error.h"
#include "core/strings.h"
#include "data/csv.h"
#include "data/image_io.h"

namespace kg::data {
namespace {

std::optional<int64_t> parse_int(const std::string& s) {
  int64_t v = 0;
  auto t = trim(s);
  auto r = std::from_chars(t.data(), t.data() + t.size(), v);
  if (r.ec != std::errc() || r.ptr != t.data() + t.size() || t.empty()) return std::nullopt;
  return v;
}

// Lists up to 20 problems and the count of the rest: enough to fix a CSV in one pass.
[[noreturn]] void fail_rows(const std::string& what, const std::vector<std::string>& problems) {
  std::string msg = what + ": " + std::to_string(problems.size()) + " bad row(s)";
  for (size_t i = 0; i < problems.size() && i < 20; ++i) msg += "\n  - " + problems[i];
  if (problems.size() > 20) msg += "\n  ... and " + std::to_string(problems.size() - 20) + " more";
  throw DataError(msg);
}

}  // namespace

std::optional<int64_t> ClassList::index_of(const std::string& label) const {
  if (numeric) {
    auto v = parse_int(label);
    if (!v || *v < 0 || *v >= size()) return std::nullopt;
    return *v;
  }
  auto it = std::lower_bound(names.begin(), names.end(), label);
  if (it == names.end() || *it != label) return std::nullopt;
  return it - names.begin();
}

nlohmann::json ClassList::to_json() const { return {{"numeric", numeric}, {"names", names}}; }

ClassList ClassList::from_json(const nlohmann::json& j) {
  ClassList c;
  try {
    c.numeric = j.at("numeric").get<bool>();
    c.names = j.at("names").get<std::vector<std::string>>();
  } catch (const std::exception& e) {
    throw CheckpointError(std::string("class list is malformed: ") + e.what());
  }
  return c;
}

ClassList infer_classes(const DataOptions& o) {
  CsvTable csv = read_csv(data_path(o, o.train_csv));
  int col = csv.require_column(o.label_cols[0], "data.label_cols");
  ClassList c;
  std::set<std::string> strings;
  int64_t max_int = -1;
  bool numeric = true;
  for (auto& r : csv.rows) {
    const std::string& v = r[static_cast<size_t>(col)];
    auto i = parse_int(v);
    if (!i) numeric = false;
    else max_int = std::max(max_int, *i);
    strings.insert(trim(v));
  }
  KG_CHECK(!csv.rows.empty(), DataError, csv.path, " has no rows");
  c.numeric = numeric;
  if (numeric) {
    int64_t n = o.num_classes ? *o.num_classes : max_int + 1;
    for (int64_t k = 0; k < n; ++k) c.names.push_back(std::to_string(k));
  } else {
    c.names.assign(strings.begin(), strings.end());
    KG_CHECK(!o.num_classes || *o.num_classes == c.size(), DataError, "data.num_classes = ", *o.num_classes, " but ",
             csv.path, " column ", o.label_cols[0], " holds ", c.size(), " distinct labels: ", join(c.names, ", "));
  }
  KG_CHECK(c.size() >= 2, DataError, csv.path, " column ", o.label_cols[0], " holds fewer than 2 classes");
  return c;
}

Table load_table(const DataOptions& o, const std::string& csv_rel, const std::string& image_dir,
                 const ClassList* classes, bool require_labels) {
  Table t;
  t.csv_path = data_path(o, csv_rel);
  CsvTable csv = read_csv(t.csv_path);
  int id_col = csv.require_column(o.id_col, "data.id_col");
  int label_col = classes ? csv.column(o.label_cols[0]) : -1;
  if (require_labels && label_col < 0) csv.require_column(o.label_cols[0], "data.label_cols");
  std::vector<std::string> problems;
  std::set<std::string> seen;
  for (size_t i = 0; i < csv.rows.size(); ++i) {
    const auto& r = csv.rows[i];
    Row row{r[static_cast<size_t>(id_col)], "", csv.where(i + 1)};
    if (row.id.empty()) problems.push_back(row.where + ": empty id");
    else if (!seen.insert(row.id).second) problems.push_back(row.where + ": duplicate id \"" + row.id + "\"");
    row.image = image_path(o, image_dir, row.id);
    if (label_col >= 0) {
      const std::string& label = r[static_cast<size_t>(label_col)];
      auto k = classes->index_of(label);
      if (!k) {
        problems.push_back(row.where + ": id " + row.id + ": label \"" + label + "\" is not one of the " +
                           std::to_string(classes->size()) + " classes" +
                           (classes->numeric ? " (0.." + std::to_string(classes->size() - 1) + ")" : ""));
        t.targets.push_back(-1);
      } else {
        t.targets.push_back(*k);
      }
    }
    t.rows.push_back(std::move(row));
  }
  if (!problems.empty()) fail_rows(t.csv_path, problems);
  KG_CHECK(!t.rows.empty(), DataError, t.csv_path, " has no rows");
  return t;
}

void check_images(const Table& t, const ImageGeometry& g, int threads) {
  std::vector<std::pair<size_t, std::string>> problems;
  std::mutex mu;
  std::atomic<size_t> next{0};
  auto work = [&] {
    for (size_t i; (i = next++) < t.rows.size();) {
      try {
        decode_image(t.rows[i].image, static_cast<int>(g.channels));
      } catch (const Error& e) {
        std::lock_guard<std::mutex> lock(mu);
        problems.emplace_back(i, t.rows[i].where + ": id " + t.rows[i].id + ": " + e.what());
      }
    }
  };
  std::vector<std::thread> pool;
  for (int k = 1; k < std::max(1, threads); ++k) pool.emplace_back(work);
  work();
  for (auto& th : pool) th.join();
  if (!problems.empty()) {
    std::sort(problems.begin(), problems.end());
    std::vector<std::string> text;
    for (auto& p : problems) text.push_back(p.second);
    fail_rows(t.csv_path + " images", text);
  }
}

}  // namespace kg::data
