// Cross-validation fold assignment. Deterministic for a seed, independent of thread count.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace kg::data {

struct Table;
struct CvOptions;

// Folds by cv.strategy: auto = group when cv.group_col is set, else stratified by Table::strata()
// (random for unlabeled tables); the table must keep cv.group_col / cv.fold_col (see fold_columns).
std::vector<int> assign_folds(const Table& t, const CvOptions& cv, uint64_t seed);
// The CSV columns assign_folds needs kept.
std::vector<std::string> fold_columns(const CvOptions& cv);

// Table rows on either side of the held-out fold cv.fold.
struct FoldSplit {
  std::vector<int> fold;              // fold of every row
  std::vector<int64_t> train, valid;  // row indices
};
FoldSplit split_folds(const Table& t, const CvOptions& cv, uint64_t seed);

// Fold index (0..folds-1) for each row. Each class's rows are shuffled (Fisher–Yates, kg::Rng seeded
// by stream_seed(seed, class)) and dealt round-robin, the fold counter running on across classes in
// ascending label order: overall fold sizes differ by at most 1, and so do each class's per-fold
// counts. ConfigError when folds < 2 or folds > number of rows.
std::vector<int> stratified_folds(const std::vector<int64_t>& labels, int folds, uint64_t seed);

// Fold index for each of n rows: a shuffled round-robin deal, so fold sizes differ by at most 1.
// ConfigError when folds < 2 or folds > n.
std::vector<int> random_folds(int64_t n, int folds, uint64_t seed);

// Fold index for each row such that rows sharing a group value share a fold (sklearn GroupKFold:
// groups dealt largest first to the fold with the fewest rows; ties broken by a seeded shuffle).
// ConfigError when there are fewer groups than folds.
std::vector<int> group_folds(const std::vector<std::string>& groups, int folds, uint64_t seed);

// The table's own fold column: integers in [0, folds); DataError naming the first bad rows.
std::vector<int> column_folds(const std::vector<std::string>& values, int folds, const std::string& col,
                              const std::vector<std::string>& where);

}  // namespace kg::data
