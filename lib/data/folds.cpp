#include "data/folds.h"

#include <map>
#include <utility>

#include "core/error.h"
#include "core/random.h"

namespace kg::data {
namespace {

void check_folds(int64_t n, int folds) {
  KG_CHECK(folds >= 2, ConfigError, "folds = ", folds, ": cross-validation needs at least 2 folds");
  KG_CHECK(folds <= n, ConfigError, "folds = ", folds, " but there are only ", n,
           " rows to split; use at most ", n, " folds");
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
  for (int64_t k = 0; k < n; ++k) fold[static_cast<size_t>(order[static_cast<size_t>(k)])] = static_cast<int>(k % folds);
  return fold;
}

}  // namespace kg::data
