#include "data/folds.h"

#include <algorithm>
#include <cstdlib>
#include <map>
#include <utility>

#include "core/error.h"
#include "core/random.h"
#include "data/options.h"
#include "data/table.h"

namespace kg::data {
namespace {

void check_folds(int64_t n, int folds) {
  KG_CHECK(folds >= 2, ConfigError, "folds = ", folds, ": cross-validation needs at least 2 folds");
  KG_CHECK(folds <= n, ConfigError, "folds = ", folds, " but there are only ", n, " rows to split; use at most ", n,
           " folds");
}

void shuffle(std::vector<int64_t>& v, uint64_t seed) {
  Rng rng(seed);
  for (size_t i = v.size(); i > 1; --i) std::swap(v[i - 1], v[rng.below(i)]);
}

}  // namespace

std::vector<int> stratified_folds(const std::vector<int64_t>& labels, int folds, uint64_t seed) {
  check_folds(static_cast<int64_t>(labels.size()), folds);
  std::map<int64_t, std::vector<int64_t>> by_class;  // ordered: the deal must not depend on hashing
  for (size_t i = 0; i < labels.size(); ++i) by_class[labels[i]].push_back(static_cast<int64_t>(i));
  std::vector<int> fold(labels.size(), -1);
  int next = 0;  // carried across classes so every class's remainder lands on different folds
  for (auto& [label, rows] : by_class) {
    shuffle(rows, stream_seed(seed, static_cast<uint64_t>(label)));
    for (int64_t r : rows) {
      fold[static_cast<size_t>(r)] = next;
      next = (next + 1) % folds;
    }
  }
  return fold;
}

std::vector<int> random_folds(int64_t n, int folds, uint64_t seed) {
  check_folds(n, folds);
  std::vector<int64_t> order(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) order[static_cast<size_t>(i)] = i;
  shuffle(order, stream_seed(seed));
  std::vector<int> fold(static_cast<size_t>(n));
  for (int64_t k = 0; k < n; ++k)
    fold[static_cast<size_t>(order[static_cast<size_t>(k)])] = static_cast<int>(k % folds);
  return fold;
}

}  // namespace kg::data

namespace kg::data {

std::vector<int> group_folds(const std::vector<std::string>& groups, int folds, uint64_t seed) {
  std::map<std::string, std::vector<int64_t>> by_group;
  for (size_t i = 0; i < groups.size(); ++i) by_group[groups[i]].push_back(static_cast<int64_t>(i));
  KG_CHECK(folds >= 2, ConfigError, "folds = ", folds, ": cross-validation needs at least 2 folds");
  KG_CHECK(static_cast<int64_t>(by_group.size()) >= folds, ConfigError, "cv.folds = ", folds,
           " but cv.group_col holds only ", by_group.size(), " distinct groups; use at most ", by_group.size(),
           " folds");
  std::vector<const std::vector<int64_t>*> order;
  for (auto& [g, rows] : by_group) order.push_back(&rows);
  Rng rng(stream_seed(seed, 0x47524F5550ULL /* "GROUP" */));
  for (size_t i = order.size(); i > 1; --i) std::swap(order[i - 1], order[rng.below(i)]);
  std::stable_sort(order.begin(), order.end(), [](auto* a, auto* b) { return a->size() > b->size(); });
  std::vector<int64_t> load(static_cast<size_t>(folds), 0);
  std::vector<int> fold(groups.size(), -1);
  for (auto* rows : order) {
    size_t f = static_cast<size_t>(std::min_element(load.begin(), load.end()) - load.begin());
    load[f] += static_cast<int64_t>(rows->size());
    for (int64_t r : *rows) fold[static_cast<size_t>(r)] = static_cast<int>(f);
  }
  return fold;
}

std::vector<int> column_folds(const std::vector<std::string>& values, int folds, const std::string& col,
                              const std::vector<std::string>& where) {
  std::vector<int> fold(values.size(), -1);
  std::vector<std::string> problems;
  for (size_t i = 0; i < values.size(); ++i) {
    const std::string& v = values[i];
    char* end = nullptr;
    long k = std::strtol(v.c_str(), &end, 10);
    if (v.empty() || *end != '\0' || k < 0 || k >= folds)
      problems.push_back(where[i] + ": " + col + " = \"" + v + "\" is not a fold in 0.." + std::to_string(folds - 1));
    else
      fold[i] = static_cast<int>(k);
  }
  if (!problems.empty()) {
    std::string msg = "cv.strategy = \"column\": " + std::to_string(problems.size()) + " row(s) with no valid fold";
    for (size_t i = 0; i < problems.size() && i < 20; ++i) msg += "\n  - " + problems[i];
    throw DataError(msg + "\n(cv.folds = " + std::to_string(folds) + ")");
  }
  return fold;
}

}  // namespace kg::data

namespace kg::data {

std::vector<std::string> fold_columns(const CvOptions& cv) {
  std::string s = cv.strategy == "auto" ? (cv.group_col.empty() ? "stratified" : "group") : cv.strategy;
  if (s == "group") {
    KG_CHECK(!cv.group_col.empty(), ConfigError,
             "cv.strategy = \"group\" needs cv.group_col (the column whose rows must share a fold)");
    return {cv.group_col};
  }
  if (s == "column") return {cv.fold_col};
  return {};
}

FoldSplit split_folds(const Table& t, const CvOptions& cv, uint64_t seed) {
  FoldSplit s;
  s.fold = assign_folds(t, cv, seed);
  for (int64_t i = 0; i < t.size(); ++i)
    (s.fold[static_cast<size_t>(i)] == cv.held_out ? s.valid : s.train).push_back(i);
  return s;
}

std::vector<int> assign_folds(const Table& t, const CvOptions& cv, uint64_t seed) {
  if (t.extra_begin >= 0) {
    // data.extra_train_csv rows train in every fold (fold -1); the split is the training table's alone.
    Table base = t;
    std::vector<bool> keep(static_cast<size_t>(t.size()));
    for (int64_t i = 0; i < t.size(); ++i) keep[static_cast<size_t>(i)] = !t.is_extra(i);
    base.filter(keep);
    base.extra_begin = -1;
    auto f = assign_folds(base, cv, seed);
    f.resize(static_cast<size_t>(t.size()), -1);
    return f;
  }
  const int k = static_cast<int>(cv.folds);
  std::string s = cv.strategy == "auto" ? (cv.group_col.empty() ? "stratified" : "group") : cv.strategy;
  if (s == "group") return group_folds(t.columns.at(cv.group_col), k, seed);
  if (s == "column") {
    std::vector<std::string> where;
    for (auto& r : t.rows) where.push_back(r.where);
    return column_folds(t.columns.at(cv.fold_col), k, cv.fold_col, where);
  }
  if (s == "random" || !t.labeled()) return random_folds(t.size(), k, seed);
  return stratified_folds(t.strata(), k, seed);
}

}  // namespace kg::data
