// Cross-validation fold assignment. Deterministic for a seed, independent of thread count.
#pragma once
#include <cstdint>
#include <vector>

namespace kg::data {

// Fold index (0..folds-1) for each row. Each class's rows are shuffled (Fisher–Yates, kg::Rng seeded
// by stream_seed(seed, class)) and dealt round-robin, the fold counter running on across classes in
// ascending label order: overall fold sizes differ by at most 1, and so do each class's per-fold
// counts. ConfigError when folds < 2 or folds > number of rows.
std::vector<int> stratified_folds(const std::vector<int64_t>& labels, int folds, uint64_t seed);

// Fold index for each of n rows: a shuffled round-robin deal, so fold sizes differ by at most 1.
// ConfigError when folds < 2 or folds > n.
std::vector<int> random_folds(int64_t n, int folds, uint64_t seed);

}  // namespace kg::data
