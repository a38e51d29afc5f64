// Shared test fixtures: a tiny Kaggle-layout image dataset, recipe resolution, running the binary.
#pragma once
#include <string>
#include <vector>

#include "support/temp_dir.h"
#include "config/recipe.h"
#include "data/options.h"
#include "data/table.h"

namespace kg::test {

struct TinyDataset {
  std::string root;  // DATA folder
  int train = 0, test = 0;
};

// A two-class dataset that a small CNN learns in one epoch: "left" images are bright on the left
// half, "right" images on the right half, plus noise. 12x12 gray PNGs, string labels, a sample
// submission whose rows are shuffled, test_labels.csv with the truth.
TinyDataset make_tiny_dataset(const TempDir& dir, int train = 64, int test = 16, int size = 12);
// The same images in raw packs (DATA/train.kgpack, DATA/test.kgpack; recipes add data.format = "pack"),
// which need no image codecs: for tests that must also run in a GPU build without them.
TinyDataset make_tiny_pack_dataset(const TempDir& dir, int train = 64, int test = 16, int size = 12);

// make_tiny_dataset(dir, rows, 4)'s training table loaded as a job loads it (1 channel, 12 x 12, classes
// inferred).
struct TinyTable {
  TempDir dir;
  data::DataOptions opts;
  data::ClassList classes;
  data::Table table;
  explicit TinyTable(int rows = 37);
};

// Resolves and validates recipe files + overrides as the CLI does (builtin recipes = repository's).
config::Recipe resolve_recipe(const std::vector<std::string>& files, const std::vector<std::string>& args);

struct RunResult {
  int exit_code = -1;
  std::string output;  // stdout + stderr
};
// Runs kgtrain's command line with `args` in this process (app/cli.h: the binary's code, linked into the tests), its
// stdout and stderr captured: no process to start (LibTorch's libraries and static registries cost ~1 s each time, ~2 s
// under ASan). What needs a process of its own (a signal, LD_PRELOAD, concurrency) uses run_kgtrain_env, run_shell
// or spawn (support/process.h); KGTRAIN_TEST_SPAWN=1 runs these through the binary too.
RunResult run_kgtrain(const std::vector<std::string>& args);
// The kgtrain binary, with environment assignments ("NAME=value") set for it alone, as env(1) does.
RunResult run_kgtrain_env(const std::vector<std::string>& env, const std::vector<std::string>& args);
// `s` as one single-quoted shell word.
std::string shell_quote(const std::string& s);
// Runs a /bin/sh command line (environment assignments, pipes, background jobs).
RunResult run_shell(const std::string& command);

// A recipe for the tiny dataset (resnet9 width 4, one epoch).
std::string tiny_recipe(const std::string& data_root);

// Regression on the tiny dataset: train.csv and test_labels.csv become id,price with "left" 100 and "right" 300;
// regression_recipe is tiny_recipe with mse, rmse + smape (monitor rmse) and identity TTA.
void price_by_side(const std::string& root);
std::string regression_recipe(const std::string& root);

}  // namespace kg::test
