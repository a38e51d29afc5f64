#include "data/table.h"

#include <algorithm>
#include <set>

#include "core/error.h"
#include "core/strings.h"
#include "data/csv.h"
#include "data/image_io.h"
#include "data/pack.h"

namespace kg::data {
namespace {

// Lists up to 20 problems and the count of the rest: enough to fix a CSV in one pass.
std::string list_rows(const std::string& what, const std::vector<BadRow>& bad) {
  std::string msg = what + ": " + std::to_string(bad.size()) + " bad row(s)";
  for (size_t i = 0; i < bad.size() && i < 20; ++i)
    msg += "\n  - " + bad[i].where + ": id " + bad[i].id + ": " + bad[i].reason;
  if (bad.size() > 20) msg += "\n  ... and " + std::to_string(bad.size() - 20) + " more";
  return msg;
}

}  // namespace

std::optional<int64_t> ClassList::index_of(const std::string& label) const {
  if (numeric) {
    auto v = cell_int(label);
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
  if (pack && r.item >= 0) return pack->image(r.item, channels, max_image_pixels);  // extra rows: loose files
  return decode_image(r.image, channels, max_image_pixels);
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
  const size_t d = static_cast<size_t>(value_dim), f = static_cast<size_t>(feature_dim),
               tx = static_cast<size_t>(text_dim);
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
    for (size_t k = 0; k < tx && out != i; ++k) texts[out * tx + k] = std::move(texts[i * tx + k]);
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
  if (!texts.empty()) texts.resize(out * tx);
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
