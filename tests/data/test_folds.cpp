#include <catch2/catch.hpp>
#include <algorithm>
#include <map>

#include "core/error.h"
#include "data/folds.h"

namespace {
namespace KG_UNITY_ID {  // each test file's own names in a unity batch (CMakeLists.txt)

using kg::data::random_folds;
using kg::data::stratified_folds;

namespace {
std::vector<int64_t> make_labels() {
  // Uneven classes, interleaved, including a singleton and a negative label.
  std::vector<int64_t> y;
  const std::map<int64_t, int> sizes = {{0, 13}, {1, 7}, {2, 1}, {5, 20}, {-3, 6}};
  for (int round = 0; round < 20; ++round)
    for (auto [label, n] : sizes)
      if (round < n) y.push_back(label);
  return y;
}

void check_balanced(const std::vector<int>& f, int folds) {
  std::vector<int> size(folds, 0);
  for (int k : f) {
    REQUIRE(k >= 0);
    REQUIRE(k < folds);
    ++size[k];
  }
  auto [lo, hi] = std::minmax_element(size.begin(), size.end());
  CHECK(*hi - *lo <= 1);
}
}  // namespace

TEST_CASE("stratified_folds: sizes and per-class balance", "[unit]") {
  const auto y = make_labels();
  for (int folds : {2, 3, 4, 5, 7}) {
    const auto f = stratified_folds(y, folds, 42);
    REQUIRE(f.size() == y.size());
    check_balanced(f, folds);
    std::map<int64_t, std::vector<int>> per_class;
    for (size_t i = 0; i < y.size(); ++i) {
      auto& v = per_class[y[i]];
      v.resize(folds, 0);
      ++v[f[i]];
    }
    for (const auto& [label, counts] : per_class) {
      auto [lo, hi] = std::minmax_element(counts.begin(), counts.end());
      INFO("folds " << folds << " class " << label);
      CHECK(*hi - *lo <= 1);
    }
  }
}

TEST_CASE("stratified_folds: deterministic per seed, seeds differ", "[unit]") {
  const auto y = make_labels();
  CHECK(stratified_folds(y, 5, 1) == stratified_folds(y, 5, 1));
  CHECK(stratified_folds(y, 5, 1) != stratified_folds(y, 5, 2));
  // A single class is still spread evenly.
  std::vector<int64_t> single(10, 4);
  auto f = stratified_folds(single, 5, 9);
  check_balanced(f, 5);
}

TEST_CASE("random_folds: sizes, determinism, shuffling", "[unit]") {
  for (int64_t n : {2, 10, 101}) {
    for (int folds : {2, 3, 10}) {
      if (folds > n) continue;
      auto f = random_folds(n, folds, 7);
      REQUIRE(f.size() == static_cast<size_t>(n));
      check_balanced(f, folds);
    }
  }
  auto a = random_folds(1000, 5, 3);
  CHECK(a == random_folds(1000, 5, 3));
  CHECK(a != random_folds(1000, 5, 4));
  std::vector<int> plain(1000);
  for (int i = 0; i < 1000; ++i) plain[i] = i % 5;
  CHECK(a != plain);
}

TEST_CASE("folds: impossible fold counts are ConfigErrors", "[unit]") {
  const std::vector<int64_t> y = {0, 1, 0};
  CHECK_THROWS_AS(stratified_folds(y, 1, 0), kg::ConfigError);
  CHECK_THROWS_AS(stratified_folds(y, 4, 0), kg::ConfigError);
  CHECK_THROWS_WITH(random_folds(3, 4, 0), Catch::Contains("folds = 4") && Catch::Contains("3 rows"));
  CHECK_THROWS_AS(random_folds(5, 0, 0), kg::ConfigError);
  CHECK_NOTHROW(stratified_folds(y, 3, 0));
}

}  // namespace KG_UNITY_ID
}  // namespace
