// fit --resume across nodes that do not share rank 0's disk (jobs/fit_resume.cpp): rank 0 reads the run and sends the
// checkpoint; the other ranks need only the recipe files. Two ranks on one machine, each in its own working directory,
// and a relative --resume path: rank 1's directory holds nothing of the run, as another node's disk would not.
#include <catch2/catch.hpp>

#include <cstdio>
#include <filesystem>
#include <string>

#include "core/fs.h"
#include "model/weights/safetensors.h"
#include "support/fixtures.h"
#include "test_paths.h"
#include "support/job_helpers.h"
#include "support/process.h"
#include "support/temp_dir.h"
#include "support/two_ranks.h"

namespace fs = std::filesystem;

namespace {
// One rank of a two-process job started by hand, as a launcher starts it, in working directory `cwd`.
std::string rank_command(int rank, int port, const std::string& cwd, const std::string& args) {
  return "cd " + kg::test::shell_quote(cwd) + " && RANK=" + std::to_string(rank) + " LOCAL_RANK=0 WORLD_SIZE=2 " +
         "LOCAL_WORLD_SIZE=1 MASTER_ADDR=127.0.0.1 MASTER_PORT=" + std::to_string(port) + " " +
         kg::test::shell_quote(KGTRAIN_BINARY) + " fit " + args;
}
}  // namespace

TEST_CASE("a resume where only rank 0's disk holds the run: rank 0 sends the checkpoint, the weights are the same",
          "[integration][dist]") {
  kg::test::TempDir dir;
  auto ds = kg::test::make_tiny_dataset(dir, 48, 4);  // 36 training rows: 3 global batches of 12 per epoch
  auto recipe = dir.write("tiny.toml", kg::test::tiny_recipe(ds.root));
  const std::string common = kg::test::shell_quote(recipe) +
                             " train.epochs=2 optim.name=sgd train.batch_size=6 train.checkpoint_every_steps=1 "
                             "checkpoint.keep_last=20 device.dist_timeout_s=60";
  auto two =
      kg::test::run_shell("cd " + kg::test::shell_quote(dir.str()) + " && " + kg::test::shell_quote(KGTRAIN_BINARY) +
                          " fit " + common + " --quiet --nproc 2 --run-dir two");
  INFO(two.output);
  REQUIRE(two.exit_code == 0);
  const std::string weights = kg::read_file(dir / "two/checkpoints/last/model.safetensors");
  // As if stopped at update 4, the first of epoch 2: the fold is not finished.
  REQUIRE(std::remove((dir / "two/fold.json").c_str()) == 0);
  const fs::path node1 = dir.path() / "node1";
  fs::create_directories(node1);
  const int port = kg::test::free_port();
  const std::string resume = common + " --resume two/checkpoints/step-000000004";
  auto res = kg::test::run_shell("(" + rank_command(1, port, node1.string(), resume) + " > " +
                                 kg::test::shell_quote((node1 / "rank1.log").string()) + " 2>&1 &) ; " +
                                 rank_command(0, port, dir.str(), resume));
  INFO(res.output);
  INFO("rank 1: " << (fs::exists(node1 / "rank1.log") ? kg::read_file((node1 / "rank1.log").string()) : std::string()));
  REQUIRE(res.exit_code == 0);
  CHECK(res.output.find("is not on the disk of rank 1: rank 0 sent its") != std::string::npos);
  CHECK(res.output.find("batch 1)") != std::string::npos);
  CHECK(kg::read_file(dir / "two/checkpoints/last/model.safetensors") == weights);
  // Rank 1 wrote nothing into its working directory: its outputs and the copy it received were scratch.
  size_t entries = 0;
  for (auto& e : fs::directory_iterator(node1)) entries += e.path().filename() != "rank1.log";
  CHECK(entries == 0);
}

TEST_CASE("a rank whose disk lacks the run and that has no recipe files is told to give them", "[integration][dist]") {
  kg::test::TempDir dir;
  auto res = kg::test::run_kgtrain_env(
      {"RANK=1", "WORLD_SIZE=2", "LOCAL_RANK=1", "MASTER_ADDR=127.0.0.1", "MASTER_PORT=29511"},
      {"fit", "--resume", dir / "runs/x/checkpoints/last"});
  INFO(res.output);
  CHECK(res.exit_code == 2);
  CHECK(res.output.find("rank 1 finds no run recipe there") != std::string::npos);
  CHECK(res.output.find("give every rank the recipe files as well") != std::string::npos);
  // One process: the path does not exist.
  auto one = kg::test::run_kgtrain({"fit", "--resume", dir / "runs/x"});
  CHECK(one.exit_code == 2);
  CHECK(one.output.find("no such directory") != std::string::npos);
}

TEST_CASE("k-fold across nodes: one process a fold into one run tree, merged, is the one-process k-fold",
          "[integration][cv]") {
  // A Slurm array job's tasks (docs/devices.md): cv.fold=$SLURM_ARRAY_TASK_ID --run-dir TREE/fold_$SLURM_ARRAY_TASK_ID,
  // here two processes at once, then merge-oof TREE/fold_* --out TREE.
  kg::test::TempDir dir;
  auto ds = kg::test::make_tiny_dataset(dir, 48, 4);
  auto recipe = dir.write("tiny.toml", kg::test::tiny_recipe(ds.root));
  const std::string common = kg::test::shell_quote(KGTRAIN_BINARY) + " fit " + kg::test::shell_quote(recipe) +
                             " cv.folds=2 train.epochs=2 device.threads=1 --quiet";
  auto task = [&](int k) {
    return common + " cv.fold=" + std::to_string(k) + " --run-dir " + kg::test::shell_quote(dir / "tree") + "/fold_" +
           std::to_string(k) + " > " + kg::test::shell_quote(dir / "task") + std::to_string(k) + ".log 2>&1";
  };
  auto array = kg::test::run_shell(task(0) + " & p0=$!; " + task(1) + " & p1=$!; wait $p0 && wait $p1");
  INFO("task 0: " << kg::read_file(dir / "task0.log") << "\ntask 1: " << kg::read_file(dir / "task1.log"));
  REQUIRE(array.exit_code == 0);
  auto merged = kg::test::run_kgtrain({"merge-oof", dir / "tree/fold_0", dir / "tree/fold_1", "--out", dir / "tree"});
  INFO(merged.output);
  REQUIRE(merged.exit_code == 0);
  auto all = kg::test::run_shell(common + " cv.fold=all --run-dir " + kg::test::shell_quote(dir / "all"));
  INFO(all.output);
  REQUIRE(all.exit_code == 0);
  const auto cv = kg::test::read_json(dir / "tree/cv.json"), one = kg::test::read_json(dir / "all/cv.json");
  CHECK(cv["complete"] == true);
  CHECK(cv["folds"].size() == 2);
  CHECK(cv["oof"] == one["oof"]);
  // The same predictions, row for row, as the folds one process trained in turn.
  CHECK(kg::read_file(dir / "tree/oof.csv") == kg::read_file(dir / "all/oof.csv"));
}

TEST_CASE("commands other than fit refuse a multi-process launch instead of racing on their outputs",
          "[integration][dist]") {
  kg::test::TempDir dir;
  auto ds = kg::test::make_tiny_dataset(dir, 48, 4);
  auto recipe = dir.write("tiny.toml", kg::test::tiny_recipe(ds.root));
  const std::vector<std::string> torchrun{"RANK=1", "WORLD_SIZE=2", "LOCAL_RANK=1", "MASTER_ADDR=127.0.0.1",
                                          "MASTER_PORT=29512"};
  auto pseudo = kg::test::run_kgtrain_env(
      torchrun, {"pseudo-label", recipe, "--checkpoint", dir / "none", "--out", dir / "pseudo"});
  INFO(pseudo.output);
  CHECK(pseudo.exit_code == 2);
  CHECK(pseudo.output.find("kgtrain pseudo-label runs as one process, and this is rank 1 of 2 started by torchrun") !=
        std::string::npos);
  CHECK(pseudo.output.find("kgtrain fit RECIPE.toml OUT/pseudo.toml under torchrun or srun") != std::string::npos);
  CHECK(!std::filesystem::exists(dir / "pseudo"));
  auto tta = kg::test::run_kgtrain_env(
      {"SLURM_PROCID=0", "SLURM_STEP_NUM_TASKS=2", "SLURM_LOCALID=0", "SLURM_STEP_TASKS_PER_NODE=2", "SLURM_NODEID=0",
       "SLURM_JOB_ID=5", "SLURM_STEP_NODELIST=localhost"},
      {"tta-predict", recipe, "--checkpoint", dir / "none"});
  INFO(tta.output);
  CHECK(tta.exit_code == 2);
  CHECK(tta.output.find("kgtrain tta-predict runs as one process, and this is rank 0 of 2 started by srun") !=
        std::string::npos);
}
