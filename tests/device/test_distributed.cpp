// Data parallel over c10d (lib/device/distributed.cpp, the loader's shards, the trainer's all-reduce,
// SyncBatchNorm, fit --nproc): collectives between two ranks in one process, the shards of an epoch,
// 2 processes x batch B = 1 process x batch 2B, and a failed rank ending the job instead of hanging.
#include <catch2/catch.hpp>

#include <cmath>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <map>
#include <set>
#include <string>
#include <thread>

#include <nlohmann/json.hpp>
#include <torch/torch.h>

#include "core/error.h"
#include "core/fs.h"
#include "core/strings.h"
#include "data/csv.h"
#include "data/loader.h"
#include "device/distributed.h"
#include "device/slurm.h"
#include "session/same_job.h"
#include "model/batchnorm.h"
#include "model/weights/safetensors.h"
#include "support/fixtures.h"
#include "train/engine.h"
#include "support/job_helpers.h"
#include "support/two_ranks.h"
#include "test_paths.h"

namespace {
namespace KG_UNITY_ID {  // each test file's own names in a unity batch (CMakeLists.txt)

namespace {

std::string rank_env(int rank, int world, int port) {
  return "RANK=" + std::to_string(rank) + " LOCAL_RANK=" + std::to_string(rank) +
         " WORLD_SIZE=" + std::to_string(world) + " MASTER_ADDR=127.0.0.1 MASTER_PORT=" + std::to_string(port) + " ";
}

}  // namespace

TEST_CASE("torchrun's environment is read, and a broken one named", "[unit][device][dist]") {
  using kg::device::dist_env_from;
  CHECK_FALSE(dist_env_from({}).active());
  CHECK_FALSE(dist_env_from({{"WORLD_SIZE", "1"}}).active());
  auto e = dist_env_from({{"WORLD_SIZE", "4"},
                          {"RANK", "3"},
                          {"LOCAL_RANK", "1"},
                          {"LOCAL_WORLD_SIZE", "2"},
                          {"MASTER_ADDR", "10.0.0.2"},
                          {"MASTER_PORT", "29400"}});
  CHECK(e.active());
  CHECK(e.rank == 3);
  CHECK(e.local_rank == 1);
  CHECK(e.local_world_size == 2);
  CHECK(e.master_addr == "10.0.0.2");
  CHECK(e.master_port == 29400);
  CHECK_FALSE(e.writer());
  CHECK(e.launcher == "torchrun");
  CHECK_FALSE(e.agent_store);  // fit --nproc, torchrun's static rendezvous: rank 0 serves the store
  // torchrun's c10d rendezvous: its agent serves the store; a restart's keys are its own.
  e = dist_env_from({{"WORLD_SIZE", "2"},
                     {"RANK", "0"},
                     {"LOCAL_RANK", "0"},
                     {"MASTER_ADDR", "h"},
                     {"MASTER_PORT", "29400"},
                     {"TORCHELASTIC_USE_AGENT_STORE", "True"},
                     {"TORCHELASTIC_RESTART_COUNT", "2"}});
  CHECK(e.agent_store);
  CHECK(e.restart == 2);
  try {
    dist_env_from({{"WORLD_SIZE", "2"}, {"RANK", "0"}, {"LOCAL_RANK", "0"}, {"MASTER_ADDR", "127.0.0.1"}});
    FAIL("no error");
  } catch (const kg::UsageError& err) {
    CHECK(std::string(err.what()).find("MASTER_PORT is not set") != std::string::npos);
  }
  try {
    dist_env_from(
        {{"WORLD_SIZE", "2"}, {"RANK", "2"}, {"LOCAL_RANK", "0"}, {"MASTER_ADDR", "h"}, {"MASTER_PORT", "1"}});
    FAIL("no error");
  } catch (const kg::UsageError& err) {
    CHECK(std::string(err.what()).find("RANK=2: expected this process's rank, below WORLD_SIZE (0..1)") !=
          std::string::npos);
  }
}

TEST_CASE("Slurm's compressed node lists and tasks per node", "[unit][device][dist]") {
  using kg::device::slurm_first_host;
  using kg::device::slurm_tasks_per_node;
  CHECK(slurm_first_host("node[01-04,07],gpu5", "L") == "node01");
  CHECK(slurm_first_host("a,b", "L") == "a");
  CHECK(slurm_first_host("single", "L") == "single");
  CHECK(slurm_first_host("rack[2-3]-n[007,9]", "L") == "rack2-n007");
  CHECK(slurm_first_host("gpu[3],cpu[1-2]", "L") == "gpu3");
  for (const char* bad : {"", "node[01-04", "node]", "[", "n[-3]", ",a"}) {
    INFO(bad);
    CHECK_THROWS_WITH(slurm_first_host(bad, "SLURM_JOB_NODELIST"),
                      Catch::StartsWith(std::string("SLURM_JOB_NODELIST=") + bad + ": expected a Slurm node list"));
  }
  CHECK(slurm_tasks_per_node("2(x3),1", "T") == std::vector<int>{2, 2, 2, 1});
  CHECK(slurm_tasks_per_node("4", "T") == std::vector<int>{4});
  CHECK(slurm_tasks_per_node("1,3(x2)", "T") == std::vector<int>{1, 3, 3});
  for (const char* bad : {"", "2(x3", "2(3)", "0", "2,", "a", "2(x0)", ",2"}) {
    INFO(bad);
    CHECK_THROWS_AS(slurm_tasks_per_node(bad, "T"), kg::UsageError);
  }
}

TEST_CASE("srun's environment is read as torchrun's, and a broken one named", "[unit][device][dist]") {
  using kg::device::dist_env_from;
  const std::map<std::string, std::string> task{{"SLURM_STEP_NUM_TASKS", "6"},
                                                {"SLURM_PROCID", "4"},
                                                {"SLURM_LOCALID", "1"},
                                                {"SLURM_NODEID", "1"},
                                                {"SLURM_STEP_TASKS_PER_NODE", "3(x2)"},
                                                {"SLURM_STEP_NODELIST", "gpu[07-08]"},
                                                {"SLURM_JOB_ID", "4812345"}};
  auto e = dist_env_from(task);
  CHECK(e.active());
  CHECK(e.launcher == "slurm");
  CHECK(e.world_size == 6);
  CHECK(e.rank == 4);
  CHECK(e.local_rank == 1);
  CHECK(e.local_world_size == 3);
  CHECK(e.master_addr == "gpu07");       // the node list's first host
  CHECK(e.master_port == 15000 + 2345);  // the job id's last 4 digits, as Lightning
  auto with = [&](std::map<std::string, std::string> extra) {
    auto m = task;
    for (auto& [k, v] : extra) m[k] = v;
    return m;
  };
  e = dist_env_from(with({{"MASTER_ADDR", "10.1.2.3"}, {"MASTER_PORT", "29400"}}));
  CHECK(e.master_addr == "10.1.2.3");
  CHECK(e.master_port == 29400);
  // torchrun started by srun (one agent a node): torchrun's variables win.
  e = dist_env_from(
      with({{"WORLD_SIZE", "2"}, {"RANK", "1"}, {"LOCAL_RANK", "0"}, {"MASTER_ADDR", "h"}, {"MASTER_PORT", "29500"}}));
  CHECK(e.launcher == "torchrun");
  CHECK(e.world_size == 2);
  // A batch script's own shell (SLURM_NTASKS, SLURM_PROCID = 0, no step of tasks) or a one-task step: one process.
  CHECK_FALSE(dist_env_from({{"SLURM_NTASKS", "4"}, {"SLURM_PROCID", "0"}}).active());
  CHECK_FALSE(dist_env_from(with({{"SLURM_STEP_NUM_TASKS", "1"}, {"SLURM_PROCID", "0"}})).active());
  auto error_of = [&](std::map<std::string, std::string> m) {
    try {
      dist_env_from(m);
    } catch (const kg::UsageError& err) {
      return std::string(err.what());
    }
    return std::string("no error");
  };
  auto no_localid = task;
  no_localid.erase("SLURM_LOCALID");
  CHECK_THAT(error_of(no_localid), Catch::StartsWith("SLURM_LOCALID is not set: srun sets it"));
  CHECK_THAT(error_of(with({{"SLURM_PROCID", "6"}})),
             Catch::StartsWith("SLURM_PROCID=6: expected this task's rank, below SLURM_STEP_NUM_TASKS (0..5)"));
  CHECK_THAT(error_of(with({{"SLURM_LOCALID", "3"}})), Catch::Contains("below this node's 3 tasks"));
  CHECK_THAT(error_of(with({{"SLURM_NODEID", "2"}})), Catch::StartsWith("SLURM_NODEID=2: expected this node's index"));
  CHECK_THAT(error_of(with({{"SLURM_STEP_NODELIST", "gpu[07"}})), Catch::StartsWith("SLURM_STEP_NODELIST=gpu[07"));
  CHECK_THAT(error_of(with({{"SLURM_JOB_ID", "12_3"}})), Catch::Contains("or set MASTER_PORT"));
}

TEST_CASE("each rank takes its slice of every global batch, a short one is split evenly and padded",
          "[unit][data][dist]") {
  std::vector<int64_t> order;
  for (int64_t i = 0; i < 10; ++i) order.push_back(100 + i);
  int64_t g = 0;
  // Global batches of 4: [100..103] [104..107] [108 109].
  CHECK(kg::data::shard_order(order, 2, false, 0, 2, &g) == std::vector<int64_t>{100, 101, 104, 105, 108});
  CHECK(g == 3);
  CHECK(kg::data::shard_order(order, 2, false, 1, 2, &g) == std::vector<int64_t>{102, 103, 106, 107, 109});
  CHECK(kg::data::shard_order(order, 2, true, 1, 2, &g) == std::vector<int64_t>{102, 103, 106, 107});
  CHECK(g == 2);
  // 9 rows: the last global batch has one sample; rank 1's share is padded with the epoch's first.
  order.pop_back();
  CHECK(kg::data::shard_order(order, 2, false, 0, 2, &g) == std::vector<int64_t>{100, 101, 104, 105, 108});
  CHECK(kg::data::shard_order(order, 2, false, 1, 2, &g) == std::vector<int64_t>{102, 103, 106, 107, 100});
  // Together the ranks cover every sample of the epoch.
  std::set<int64_t> all;
  for (int r = 0; r < 3; ++r)
    for (auto x : kg::data::shard_order(order, 2, false, r, 3, &g)) all.insert(x);
  CHECK(all.size() == order.size());
}

TEST_CASE("Gloo collectives between two ranks: bucketed sum, broadcast, strings, a differentiable sum",
          "[unit][device][dist]") {
  kg::test::RankChecks checks;
  kg::test::two_ranks([&](kg::device::ProcessGroup& g) {
    const double r = g.rank();
    // Three tensors of two dtypes; 16-byte buckets force several collectives.
    std::vector<at::Tensor> t{torch::full({3}, r + 1), torch::full({2, 2}, 10 * (r + 1)),
                              torch::full({5}, static_cast<int64_t>(r + 1), torch::kLong)};
    g.all_reduce_sum(t, 16);
    RANK_CHECK(checks, g.rank(), torch::equal(t[0], torch::full({3}, 3.0)));
    RANK_CHECK(checks, g.rank(), torch::equal(t[1], torch::full({2, 2}, 30.0)));
    RANK_CHECK(checks, g.rank(), torch::equal(t[2], torch::full({5}, int64_t{3}, torch::kLong)));
    std::vector<at::Tensor> b{torch::full({4}, r),
                              torch::arange(6).reshape({2, 3}).t() * (r + 1)};  // a non-contiguous one
    g.broadcast(b, 0);
    RANK_CHECK(checks, g.rank(), torch::equal(b[0], torch::zeros({4})));
    RANK_CHECK(checks, g.rank(), torch::equal(b[1], torch::arange(6).reshape({2, 3}).t()));
    std::vector<std::string> s{g.rank() == 0 ? "run/dir" : "x", g.rank() == 0 ? "" : "yyyy"};
    g.broadcast_strings(s);
    RANK_CHECK(checks, g.rank(), s == std::vector<std::string>{"run/dir", ""});
    // d(sum over ranks of (r+1) * x_r . w)/dx_r for the loss sum over both ranks: the same on each.
    auto x = torch::full({2}, r + 1).requires_grad_(true);
    auto y = g.differentiable_sum(x * (r + 1));
    RANK_CHECK(checks, g.rank(), torch::equal(y.detach(), torch::full({2}, 5.0)));  // 1*1 + 2*2
    (y * (r + 1)).sum().backward();  // each rank's loss weighs the sum by (r + 1): total weight 3
    RANK_CHECK(checks, g.rank(), torch::allclose(x.grad(), torch::full({2}, 3 * (r + 1))));
  });
  checks.report();
}

TEST_CASE("sharded predictions are gathered in the rows' order on every rank", "[unit][train][dist]") {
  // 5 rows over 2 ranks: rank 0 predicted rows 0, 2, 4 of the list, rank 1 rows 1, 3.
  const std::vector<int64_t> all{40, 41, 42, 43, 44};
  kg::test::RankChecks checks;
  kg::test::two_ranks([&](kg::device::ProcessGroup& g) {
    const int r = g.rank();
    const auto mine = kg::data::shard_rows(all, r, 2);
    RANK_CHECK(checks, r, mine == (r == 0 ? std::vector<int64_t>{40, 42, 44} : std::vector<int64_t>{41, 43}));
    kg::train::Predictions p;
    p.rows = mine;
    p.images = static_cast<int64_t>(mine.size());
    p.probs = torch::empty({p.images, 2});
    p.targets = torch::empty({p.images}, torch::kLong);
    for (int64_t j = 0; j < p.images; ++j) {
      p.probs[j][0] = static_cast<float>(mine[static_cast<size_t>(j)]);
      p.probs[j][1] = 1.0f;
      p.targets[j] = mine[static_cast<size_t>(j)] % 2;
    }
    p.loss = r == 0 ? 1.0 : 2.0;  // mean over 3 and 2 rows: (3 * 1 + 2 * 2) / 5
    kg::train::gather_predictions(p, g);
    RANK_CHECK(checks, r, p.rows == all);
    RANK_CHECK(checks, r, p.images == 5);
    RANK_CHECK(checks, r, torch::equal(p.probs.select(1, 0), torch::tensor({40.f, 41.f, 42.f, 43.f, 44.f})));
    RANK_CHECK(checks, r, torch::equal(p.targets, torch::tensor({0, 1, 0, 1, 0}, torch::kLong)));
    RANK_CHECK(checks, r, p.loss == Approx(7.0 / 5));
  });
  checks.report();
}

TEST_CASE("SyncBatchNorm on two ranks normalises like BatchNorm on their joined batch", "[unit][model][dist]") {
  torch::manual_seed(5);
  const auto x = torch::randn({6, 3, 4, 4});
  const auto w = torch::randn({6, 3, 4, 4});
  kg::model::BatchNorm2d ref(3);
  auto yref = ref->forward(x);
  kg::test::RankChecks checks;
  kg::test::two_ranks([&](kg::device::ProcessGroup& g) {
    // Each rank owns a module and half the batch. The hook is process-wide; both ranks live in this
    // process, so it sums through the calling thread's group.
    kg::model::BatchNorm2d bn(3);
    const int64_t r = g.rank();
    auto xr = x.narrow(0, 3 * r, 3).clone();
    thread_local kg::device::ProcessGroup* mine = nullptr;
    mine = &g;
    kg::model::set_batchnorm_sync([](const at::Tensor& t) { return mine->differentiable_sum(t); });
    auto y = bn->forward(xr);
    RANK_CHECK(checks, r, torch::allclose(y, yref.narrow(0, 3 * r, 3).detach(), 1e-5, 1e-5));
    RANK_CHECK(checks, r, torch::allclose(bn->running_mean, ref->running_mean, 1e-6, 1e-6));
    RANK_CHECK(checks, r, torch::allclose(bn->running_var, ref->running_var, 1e-5, 1e-6));
  });
  kg::model::set_batchnorm_sync(nullptr);
  checks.report();
}

TEST_CASE("fit --nproc 2 with batch B trains the weights of one process with batch 2B (overlapped or not)",
          "[integration][dist]") {
  kg::test::TempDir dir;
  auto ds = kg::test::make_tiny_dataset(dir, 48, 4);  // fold 1 of 4 held out: 36 training rows = 3 global batches of 12
  auto recipe = dir.write("tiny.toml", kg::test::tiny_recipe(ds.root));
  const std::vector<std::string> common{"train.epochs=2", "optim.name=sgd", "optim.momentum=0.9", "--quiet"};
  auto one =
      kg::test::run_kgtrain(kg::test::cat({"fit", recipe, "train.batch_size=12", "--run-dir", dir / "one"}, common));
  INFO(one.output);
  REQUIRE(one.exit_code == 0);
  auto two = kg::test::run_kgtrain(kg::test::cat({"fit", recipe, "train.batch_size=6", "device.sync_batchnorm=true",
                                                  "device.dist_timeout_s=60", "--nproc", "2", "--run-dir", dir / "two"},
                                                 common));
  INFO(two.output);
  REQUIRE(two.exit_code == 0);
  // The same with every bucket summed after backward instead of during it: the same weights, bit for bit.
  auto off = kg::test::run_kgtrain(
      kg::test::cat({"fit", recipe, "train.batch_size=6", "device.sync_batchnorm=true", "device.dist_overlap=false",
                     "device.dist_timeout_s=60", "--nproc", "2", "--run-dir", dir / "off"},
                    common));
  INFO(off.output);
  REQUIRE(off.exit_code == 0);
  const auto a = kg::model::read_safetensors(dir / "one/checkpoints/last/model.safetensors");
  const auto b = kg::model::read_safetensors(dir / "two/checkpoints/last/model.safetensors");
  const auto c = kg::model::read_safetensors(dir / "off/checkpoints/last/model.safetensors");
  for (auto& [k, t] : b) {
    INFO(k);
    CHECK(torch::equal(t, c.at(k)));
  }
  // One process sums each weight gradient over 12 images x 12 x 12 pixels in one GEMM; two sum 6 and add: float32
  // sums of n terms in another order differ by about sqrt(n) * 2^-24 relatively (a BLAS's blocking, MKL or OpenBLAS,
  // shows it; the reference BLAS summed in one order), for each of 6 updates, which SGD momentum 0.9 carries up to
  // 1 / (1 - 0.9) = 10 times: 1.5e-4 relative. A real fault (a rank's gradient not averaged, BN statistics of 6 rows)
  // is 1e-2 or more.
  const double kTol = 6 * 10 * std::sqrt(12.0 * 12 * 12) * std::ldexp(1.0, -24);
  REQUIRE(a.size() == b.size());
  for (auto& [k, t] : a) {
    INFO(k);
    const auto& u = b.at(k);
    if (!t.is_floating_point()) {
      CHECK(torch::equal(t, u));  // num_batches_tracked: 6 updates either way
      continue;
    }
    CHECK((t - u).abs().max().item<double>() <= kTol * (1 + t.abs().max().item<double>()));
  }
  // Validation is sharded (6 rows per rank) and gathered: the same rows, order and numbers as one process.
  const auto oof1 = kg::data::read_csv(dir / "one/oof_fold.csv"), oof2 = kg::data::read_csv(dir / "two/oof_fold.csv");
  REQUIRE(oof2.rows.size() == 12);
  REQUIRE(oof1.rows.size() == oof2.rows.size());
  for (size_t i = 0; i < oof1.rows.size(); ++i) {
    CHECK(oof1.rows[i][0] == oof2.rows[i][0]);  // id
    for (size_t c = 1; c < oof1.rows[i].size(); ++c) {
      char* end = nullptr;
      const double x = std::strtod(oof1.rows[i][c].c_str(), &end), y = std::strtod(oof2.rows[i][c].c_str(), &end);
      if (end && *end == 0) CHECK(std::abs(x - y) <= 1e-4);
    }
  }
  auto last_valid_loss = [&](const std::string& run) -> double {
    auto lines = kg::split(kg::read_file(dir / (run + "/metrics.jsonl")), '\n');
    while (!lines.empty() && lines.back().empty()) lines.pop_back();
    return nlohmann::json::parse(lines.back()).at("valid_loss").template get<double>();
  };
  CHECK(std::abs(last_valid_loss("one") - last_valid_loss("two")) <= 1e-4);
  const auto summary = kg::test::read_json(dir / "two/summary.json");
  CHECK(summary["folds"][0]["processes"] == 2);
  CHECK(summary["folds"][0]["validation_shards"] == 2);
  CHECK(summary["folds"][0]["updates"] == kg::test::read_json(dir / "one/summary.json")["folds"][0]["updates"]);
}

TEST_CASE("two tasks started as srun starts them train the weights of fit --nproc 2, bit for bit",
          "[integration][dist]") {
  kg::test::TempDir dir;
  auto ds = kg::test::make_tiny_dataset(dir, 48, 4);
  auto recipe = dir.write("tiny.toml", kg::test::tiny_recipe(ds.root));
  const std::string args = "' --quiet train.epochs=2 train.batch_size=6 device.dist_timeout_s=60 ";
  auto nproc = kg::test::run_kgtrain(
      {"fit", recipe, "--quiet", "train.epochs=2", "train.batch_size=6", "--nproc", "2", "--run-dir", dir / "nproc"});
  INFO(nproc.output);
  REQUIRE(nproc.exit_code == 0);
  // srun's variables only (no RANK, WORLD_SIZE, MASTER_ADDR): the store on the node list's first host.
  const int port = kg::test::free_port();
  auto task = [&](int rank) {
    return "SLURM_JOB_ID=77 SLURM_STEP_NUM_TASKS=2 SLURM_STEP_TASKS_PER_NODE=2 SLURM_NODEID=0 "
           "SLURM_STEP_NODELIST=localhost MASTER_PORT=" +
           std::to_string(port) + " SLURM_PROCID=" + std::to_string(rank) + " SLURM_LOCALID=" + std::to_string(rank) +
           " '" + KGTRAIN_BINARY + "' fit '" + recipe + args;
  };
  auto srun =
      kg::test::run_shell("(" + task(1) + ">/dev/null 2>&1 &) ; " + task(0) + "--run-dir '" + (dir / "srun") + "'");
  INFO(srun.output);
  REQUIRE(srun.exit_code == 0);
  const auto a = kg::model::read_safetensors(dir / "nproc/checkpoints/last/model.safetensors");
  const auto b = kg::model::read_safetensors(dir / "srun/checkpoints/last/model.safetensors");
  REQUIRE(a.size() == b.size());
  for (auto& [k, t] : a) {
    INFO(k);
    CHECK(torch::equal(t, b.at(k)));
  }
  CHECK(kg::test::read_json(dir / "srun/summary.json")["folds"][0]["processes"] == 2);
}

TEST_CASE("a job's fingerprint: binary, LibTorch and recipe, the nodes' own keys aside", "[unit][session][dist]") {
  kg::test::TempDir dir;
  auto ds = kg::test::make_tiny_dataset(dir, 8, 2);
  auto file = dir.write("tiny.toml", kg::test::tiny_recipe(ds.root));
  auto fp = [&](std::vector<std::string> args) {
    return kg::session::job_fingerprint(kg::test::resolve_recipe({file}, args), "kgtrain 1 sha256 ab");
  };
  const auto base = fp({});
  CHECK(base[0] == "binary kgtrain 1 sha256 ab");
  CHECK(kg::starts_with(base[1], "LibTorch "));
  CHECK(std::find(base.begin(), base.end(), "optim.lr = 0.02") != base.end());
  // A node's own cores, GPUs and memory may differ; anything else may not.
  CHECK(kg::session::first_difference(base, fp({"device.threads=2", "data.num_workers=1"})).empty());
  CHECK(kg::session::first_difference(base, fp({"optim.lr=0.5"})) == "optim.lr: 0.02 on rank 0, 0.5 here");
  CHECK(kg::session::first_difference(base, fp({"+model.extra_key=1"})) ==
        "model.extra_key: (not set) on rank 0, 1 here");
  auto other_binary = base;
  other_binary[0] = "binary kgtrain 1 sha256 cd";
  CHECK(kg::session::first_difference(base, other_binary) ==
        "binary: kgtrain 1 sha256 ab on rank 0, kgtrain 1 sha256 cd here");
}

TEST_CASE("ranks that run another recipe stop before training, every one with exit 2", "[integration][dist]") {
  kg::test::TempDir dir;
  auto ds = kg::test::make_tiny_dataset(dir, 24, 4);
  auto recipe = dir.write("tiny.toml", kg::test::tiny_recipe(ds.root));
  const int port = kg::test::free_port();
  const std::string bin =
      std::string("'") + KGTRAIN_BINARY + "' fit '" + recipe + "' --quiet device.dist_timeout_s=60 ";
  auto r = kg::test::run_shell("(" + rank_env(1, 2, port) + bin + "optim.lr=0.5 > '" + (dir / "rank1.txt") +
                               "' 2>&1; echo $? > '" + (dir / "rank1.exit") + "') & " + rank_env(0, 2, port) + bin +
                               "--run-dir '" + (dir / "run") + "'; echo exit0=$?; wait");
  INFO(r.output);
  CHECK(r.output.find("exit0=2") != std::string::npos);
  CHECK(r.output.find("rank 1 of 2 run another job than rank 0") != std::string::npos);
  const std::string rank1 = kg::read_file(dir / "rank1.txt");
  INFO(rank1);
  CHECK(kg::trim(kg::read_file(dir / "rank1.exit")) == "2");
  CHECK(rank1.find("this rank runs another job than rank 0: optim.lr: 0.02 on rank 0, 0.5 here") != std::string::npos);
}

// A shell loop that waits (at most 120 s) until the run in `run_dir` has finished an epoch: training is under way.
std::string until_trained(const std::string& run_dir) {
  return "for i in $(seq 600); do [ -s '" + run_dir + "/metrics.jsonl' ] && break; sleep 0.2; done; ";
}

TEST_CASE("a rank that fails or never comes ends the job with exit 4, not a hang", "[integration][slow][dist]") {
  kg::test::TempDir dir;
  auto ds = kg::test::make_tiny_dataset(dir, 24, 4);
  auto recipe = dir.write("tiny.toml", kg::test::tiny_recipe(ds.root));
  const std::string bin =
      std::string("'") + KGTRAIN_BINARY + "' fit '" + recipe + "' --quiet device.dist_timeout_s=20 ";
  SECTION("rank 1 dies in training (SIGKILL): rank 0 stops with exit 4") {
    const int port = kg::test::free_port();
    const std::string run = dir / "run", many = "train.epochs=3000 ";
    const auto t0 = std::chrono::steady_clock::now();
    auto r =
        kg::test::run_shell("(" + rank_env(1, 2, port) + bin + many + ">/dev/null 2>&1 & echo $! > '" + (dir / "k1") +
                            "'; wait) & " + rank_env(0, 2, port) + bin + many + "--run-dir '" + run + "' & p0=$!; " +
                            until_trained(run) + "kill -KILL $(cat '" + (dir / "k1") + "'); wait $p0; echo exit0=$?");
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    INFO(r.output);
    CHECK(r.output.find("exit0=4") != std::string::npos);
    CHECK(r.output.find("[rank 0/2] error: distributed") != std::string::npos);
    CHECK(s < 60);
  }
  SECTION("rank 1 never starts: the rendezvous times out") {
    auto r = kg::test::run_shell(rank_env(0, 2, kg::test::free_port()) + bin + "device.dist_timeout_s=3 --run-dir '" +
                                 (dir / "run2") + "'");
    INFO(r.output);
    CHECK(r.exit_code == 4);
    CHECK(r.output.find("distributed rendezvous at 127.0.0.1:") != std::string::npos);
  }
  SECTION("rank 1 never starts: SIGTERM ends the wait at once (exit 143), the whole wait is one timeout") {
    const auto t0 = std::chrono::steady_clock::now();
    auto r = kg::test::run_shell(rank_env(0, 2, kg::test::free_port()) + bin + "device.dist_timeout_s=60 --run-dir '" +
                                 (dir / "run5") + "' & p=$!; sleep 3; kill -TERM $p; wait $p; echo exit=$?");
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    INFO(r.output);
    CHECK(r.output.find("exit=143") != std::string::npos);
    CHECK(s < 20);
    const auto t1 = std::chrono::steady_clock::now();
    r = kg::test::run_shell(rank_env(1, 2, kg::test::free_port()) + bin + "device.dist_timeout_s=6");
    const double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - t1).count();
    INFO(r.output);
    CHECK(r.exit_code == 4);
    CHECK(waited < 10.5);  // connecting and meeting the ranks share the 6 s (they took 2 x 6 s)
  }
  SECTION("Ctrl-C to fit --nproc: every rank stops at the same update, rank 0 saves, exit 130") {
    auto r =
        kg::test::run_shell(std::string("'") + KGTRAIN_BINARY + "' fit '" + recipe +
                            "' --quiet train.epochs=3000 --nproc 2 " + "--run-dir '" + (dir / "run3") + "' & pid=$!; " +
                            until_trained(dir / "run3") + "kill -INT $pid; wait $pid; echo exit=$?");
    INFO(r.output);
    CHECK(r.output.find("exit=130") != std::string::npos);
    const auto summary = kg::test::read_json(dir / "run3/summary.json");
    CHECK(summary["status"] == "interrupted");
    CHECK(std::filesystem::exists(dir / "run3/checkpoints/last/MANIFEST.json"));
  }
  SECTION("SIGTERM to one rank only: every rank stops at the same update as interrupted, rank 0 saves, exit 143") {
    // Rank 0 used to take a peer's stop for a finished run and fail in the next collective (exit 4, no save).
    const int port = kg::test::free_port();
    const std::string run = dir / "run4", many = "train.epochs=3000 ";
    auto r = kg::test::run_shell("(" + rank_env(1, 2, port) + bin + many + ">/dev/null 2>&1 & echo $! > '" +
                                 (dir / "p1") + "'; wait $!; echo $? > '" + (dir / "e1") + "') & " +
                                 rank_env(0, 2, port) + bin + many + "--run-dir '" + run + "' & p0=$!; " +
                                 until_trained(run) + "kill -TERM $(cat '" + (dir / "p1") +
                                 "'); wait $p0; echo exit0=$?; wait; echo exit1=$(cat '" + (dir / "e1") + "')");
    INFO(r.output);
    CHECK(r.output.find("exit0=143") != std::string::npos);
    CHECK(r.output.find("exit1=143") != std::string::npos);
    const auto summary = kg::test::read_json(run + "/summary.json");
    CHECK(summary["status"] == "interrupted");
    CHECK(std::filesystem::exists(run + "/checkpoints/last/MANIFEST.json"));
  }
  SECTION("--nproc inside a launched job is refused") {
    auto r = kg::test::run_shell("WORLD_SIZE=2 " + bin + "--nproc 2");
    CHECK(r.exit_code == 2);
    CHECK(r.output.find("use either torchrun or --nproc") != std::string::npos);
  }
}

TEST_CASE("an epoch-end checkpoint of 2 processes resumes on 1 with the schedule where it stood",
          "[integration][dist]") {
  kg::test::TempDir dir;
  auto ds = kg::test::make_tiny_dataset(dir, 48, 4);  // 36 training rows
  auto recipe = dir.write("tiny.toml", kg::test::tiny_recipe(ds.root));
  const std::vector<std::string> common{"train.epochs=3",          "optim.name=sgd",
                                        "train.batch_size=6",      "train.checkpoint_every_steps=1",
                                        "checkpoint.keep_last=20", "--quiet"};
  // 2 processes x 6 images: 3 updates per epoch; checkpoints/step-000000003 is the end of epoch 1.
  auto two = kg::test::run_kgtrain(
      kg::test::cat({"fit", recipe, "device.dist_timeout_s=60", "--nproc", "2", "--run-dir", dir / "two"}, common));
  INFO(two.output);
  REQUIRE(two.exit_code == 0);
  // 1 process x 6 images: 6 updates per epoch, 18 in all; the one-cycle schedule spans them.
  auto one = kg::test::run_kgtrain(kg::test::cat({"fit", recipe, "--run-dir", dir / "one"}, common));
  INFO(one.output);
  REQUIRE(one.exit_code == 0);
  // As if the 2-process run had been stopped after epoch 1: the fold is not finished; resume on 1 process.
  REQUIRE(std::remove((dir / "two/fold.json").c_str()) == 0);
  auto res = kg::test::run_kgtrain({"fit", "--resume", dir / "two/checkpoints/step-000000003"});
  INFO(res.output);
  REQUIRE(res.exit_code == 0);
  CHECK(res.output.find("the schedule goes on from update 6 of 18 (the checkpoint counted 3)") != std::string::npos);
  auto lines = [&](const std::string& run) {
    std::vector<nlohmann::json> out;
    for (auto& l : kg::split(kg::read_file(dir / (run + "/metrics.jsonl")), '\n'))
      if (!l.empty()) out.push_back(nlohmann::json::parse(l));
    return out;
  };
  const auto a = lines("one"), b = lines("two");
  REQUIRE(a.size() == 3);
  REQUIRE(b.size() == 3);
  // Epochs 2 and 3 of the resumed run: the updates and learning rates of the 1-process run's layout
  // (without the rebase they would stop at update 15, the last one mid-schedule at a high rate).
  for (size_t e = 1; e < 3; ++e) {
    INFO("epoch " << e + 1);
    CHECK(b[e]["step"] == a[e]["step"]);
    CHECK(b[e]["lr"].get<double>() == Approx(a[e]["lr"].get<double>()).epsilon(1e-12));
  }
}

TEST_CASE("a mid-epoch checkpoint of 2 processes resumes to the same weights and epoch losses", "[integration][dist]") {
  kg::test::TempDir dir;
  auto ds = kg::test::make_tiny_dataset(dir, 48, 4);  // 36 training rows: 3 global batches of 12 per epoch
  auto recipe = dir.write("tiny.toml", kg::test::tiny_recipe(ds.root));
  auto two = kg::test::run_kgtrain({"fit", recipe, "train.epochs=2", "optim.name=sgd", "train.batch_size=6",
                                    "train.checkpoint_every_steps=1", "checkpoint.keep_last=20",
                                    "device.dist_timeout_s=60", "--nproc", "2", "--run-dir", dir / "two", "--quiet"});
  INFO(two.output);
  REQUIRE(two.exit_code == 0);
  auto lines = [&] {
    std::vector<nlohmann::json> out;
    for (auto& l : kg::split(kg::read_file(dir / "two/metrics.jsonl"), '\n'))
      if (!l.empty()) out.push_back(nlohmann::json::parse(l));
    return out;
  };
  const auto before = lines();
  const std::string weights = kg::read_file(dir / "two/checkpoints/last/model.safetensors");
  // Update 4 is the first of epoch 2's three: each rank had summed its own share of that epoch's loss.
  REQUIRE(std::remove((dir / "two/fold.json").c_str()) == 0);
  auto res = kg::test::run_kgtrain({"fit", "--resume", dir / "two/checkpoints/step-000000004", "--nproc", "2"});
  INFO(res.output);
  REQUIRE(res.exit_code == 0);
  CHECK(res.output.find("batch 1)") != std::string::npos);
  const auto after = lines();
  REQUIRE(after.size() == 2);
  // Every rank restored the saved partial sums before: epoch 2's train_loss counted them twice.
  CHECK(after[1]["train_loss"].get<double>() == Approx(before[1]["train_loss"].get<double>()).epsilon(1e-9));
  CHECK(kg::read_file(dir / "two/checkpoints/last/model.safetensors") == weights);
}

TEST_CASE("OOM back-off on 2 processes retries the update the same with buckets overlapped or not",
          "[integration][dist][oom]") {
  kg::test::TempDir dir;
  auto ds = kg::test::make_tiny_dataset(dir, 48, 4);  // 36 training rows: 2 global batches of 2 x 8 an epoch
  auto recipe = dir.write("tiny.toml", kg::test::tiny_recipe(ds.root));
  // Both ranks "run out of memory" above 4 images after the forward pass, before the bucket hooks are
  // armed: each update is retried at 4 images per micro-batch, 2 accumulated.
  kg::test::EnvVar fake("KGTRAIN_FAKE_OOM_ABOVE", "4");
  auto run = [&](const std::string& name, const std::string& overlap) {
    auto r = kg::test::run_kgtrain({"fit", recipe, "train.epochs=2", "optim.name=sgd", "train.batch_size=8",
                                    "device.dist_overlap=" + overlap, "device.dist_timeout_s=60", "--nproc", "2",
                                    "--run-dir", dir / name});
    INFO(r.output);
    REQUIRE(r.exit_code == 0);
    CHECK_THAT(r.output, Catch::Contains("out of memory at update 1 (micro-batch 8): now 4 x 2 accumulated"));
    CHECK(kg::test::read_json(dir / (name + "/summary.json"))["folds"][0]["oom_backoff"]["halvings"] == 1);
  };
  run("on", "true");
  run("off", "false");
  CHECK(kg::read_file(dir / "on/checkpoints/last/model.safetensors") ==
        kg::read_file(dir / "off/checkpoints/last/model.safetensors"));
}

TEST_CASE("adversarial training (AWP) on 2 processes: the buckets wait for the second backward",
          "[integration][dist][adversarial]") {
  kg::test::TempDir dir;
  auto ds = kg::test::make_tiny_dataset(dir, 48, 4);
  auto recipe = dir.write("tiny.toml", kg::test::tiny_recipe(ds.root));
  auto run = [&](const std::string& name, const std::string& overlap) {
    auto r = kg::test::run_kgtrain({"fit", recipe, "train.epochs=2", "train.batch_size=8", "train.adversarial.kind=awp",
                                    "train.adversarial.lr=0.05", "device.dist_overlap=" + overlap,
                                    "device.dist_timeout_s=60", "--nproc", "2", "--run-dir", dir / name});
    INFO(r.output);
    REQUIRE(r.exit_code == 0);
    CHECK_THAT(r.output, Catch::Contains("the ranks' gradients summed once, after both backwards"));
    return kg::read_file(dir / (name + "/checkpoints/last/model.safetensors"));
  };
  // device.dist_overlap = true (the default) sums the buckets after both backwards, as false does: the same bytes.
  const std::string on = run("on", "true"), off = run("off", "false");
  CHECK(on == off);
  // And the attack changed the run.
  auto plain = kg::test::run_kgtrain({"fit", recipe, "train.epochs=2", "train.batch_size=8", "device.dist_timeout_s=60",
                                      "--nproc", "2", "--run-dir", dir / "plain"});
  REQUIRE(plain.exit_code == 0);
  CHECK(kg::read_file(dir / "plain/checkpoints/last/model.safetensors") != on);
}

}  // namespace KG_UNITY_ID
}  // namespace
