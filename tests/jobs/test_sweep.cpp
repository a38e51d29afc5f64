// End to end through the real binary: `fit -m` sweeps (Hydra's grammar) run as ordinary fit runs, two at a
// time, survive a SIGKILL of the sweep process (its runs get SIGTERM, save, and continue with --resume),
// and write sweep.csv; bad sweeps exit 2 before any run starts.
#include <catch2/catch.hpp>

#include <filesystem>

#include "data/csv.h"
#include "jobs/sweep.h"
#include "support/fixtures.h"
#include "support/job_helpers.h"
#include "support/process.h"

namespace {
namespace KG_UNITY_ID {  // each test file's own names in a unity batch (CMakeLists.txt)

namespace fs = std::filesystem;

namespace {

// Polls until `ready()` or 120 s pass.
bool eventually(const std::function<bool()>& ready) {
  const auto t0 = std::chrono::steady_clock::now();
  while (!ready()) {
    if (std::chrono::steady_clock::now() - t0 > std::chrono::seconds(120)) return false;
    usleep(20000);
  }
  return true;
}

// Whether any process's command line mentions `needle` (the runs of a killed sweep, still saving).
bool process_mentions(const std::string& needle) {
  for (auto& e : fs::directory_iterator("/proc")) {
    const std::string name = e.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::string cmdline;
    try {
      cmdline = kg::read_file((e.path() / "cmdline").string());
    } catch (const std::exception&) {
      continue;  // gone meanwhile
    }
    if (cmdline.find(needle) != std::string::npos) return true;
  }
  return false;
}

}  // namespace

TEST_CASE("a 6-run sweep with --jobs 2 survives a kill and --resume, and writes sweep.csv",
          "[integration][jobs][sweep]") {
  kg::test::TempDir dir;
  auto ds = kg::test::make_tiny_dataset(dir, 64, 4);
  auto recipe = dir.write("tiny.toml", kg::test::tiny_recipe(ds.root));
  const std::string sweep = dir / "sweep";
  const std::vector<std::string> args{"fit",
                                      "-m",
                                      recipe,
                                      "optim.lr=0.02,0.01,0.005",
                                      "train.epochs=range(2,4)",
                                      "train.checkpoint_every_steps=1",
                                      "--jobs",
                                      "2",
                                      "--run-dir",
                                      sweep};

  auto dry = kg::test::run_kgtrain(kg::test::cat(args, {"--dry-run"}));
  INFO(dry.output);
  REQUIRE(dry.exit_code == 0);
  CHECK(dry.output.find("sweep: 6 runs") != std::string::npos);
  CHECK(dry.output.find("run_005  optim.lr=0.005 train.epochs=3") != std::string::npos);
  CHECK(!fs::exists(sweep));  // a dry run writes nothing

  int status = 0;
  const pid_t pid = kg::test::spawn(args, dir / "sweep.log");
  REQUIRE(kg::test::signal_when(
      pid, [&] { return kg::test::last_step(sweep + "/run_001") >= 3; }, SIGKILL, 0, status));
  // The runs it had started got SIGTERM when it died: each saves and stops ("interrupted"; one signalled
  // before it set up its handlers just ends, and --resume starts it again).
  REQUIRE(eventually([&] { return !process_mentions(sweep + "/run_"); }));
  CHECK(kg::jobs::read_sweep_result(sweep + "/run_001").status == "interrupted");

  auto resumed = kg::test::run_kgtrain({"fit", "-m", "--resume", sweep, "--jobs", "2"});
  INFO(kg::read_file(dir / "sweep.log") << resumed.output);
  REQUIRE(resumed.exit_code == 0);
  CHECK(resumed.output.find("sweep: 6 of 6 runs completed") != std::string::npos);
  CHECK(kg::read_file(sweep + "/run_001/fit.log").find("resumed from") != std::string::npos);

  auto csv = kg::data::read_csv(sweep + "/sweep.csv");
  REQUIRE(csv.header == std::vector<std::string>{"run", "dir", "overrides", "status", "metric", "value", "best_epoch",
                                                 "wall_s", "exit_code"});
  REQUIRE(csv.rows.size() == 6);
  for (size_t i = 0; i < 6; ++i) {
    INFO("row " << i);
    CHECK(csv.rows[i][3] == "completed");
    CHECK(csv.rows[i][4] == "accuracy");
    CHECK(std::stod(csv.rows[i][5]) >= 0.0);
    const auto summary = kg::test::read_json(sweep + "/" + csv.rows[i][1] + "/summary.json");
    CHECK(summary["status"] == "completed");
    CHECK(summary["epochs_completed"] == (i % 2 == 0 ? 2 : 3));
  }
  CHECK(csv.rows[5][2] == "optim.lr=0.005 train.epochs=3");
  // Each run is an ordinary run folder with its swept keys in its recipe.
  CHECK(kg::read_file(sweep + "/run_004/recipe.toml").find("lr = 0.005") != std::string::npos);
  // Every run finished: a second --resume has nothing to do.
  auto again = kg::test::run_kgtrain({"fit", "-m", "--resume", sweep});
  CHECK(again.exit_code == 0);
  CHECK(again.output.find("6 already done") != std::string::npos);
}

TEST_CASE("bad sweeps exit 2 before any run starts", "[integration][jobs][sweep]") {
  kg::test::TempDir dir;
  auto ds = kg::test::make_tiny_dataset(dir, 16, 4);
  auto recipe = dir.write("tiny.toml", kg::test::tiny_recipe(ds.root));
  const std::string sweep = dir / "sweep";
  auto typo = kg::test::run_kgtrain({"fit", "-m", recipe, "optim.lr=0.1,fast", "--run-dir", sweep});
  CHECK(typo.exit_code == 2);
  CHECK(typo.output.find("sweep run run_001 (optim.lr=fast)") != std::string::npos);
  CHECK(!fs::exists(sweep));
  auto range = kg::test::run_kgtrain({"fit", "-m", recipe, "train.epochs=range(1,x)", "--run-dir", sweep});
  CHECK(range.exit_code == 2);
  CHECK(range.output.find("range() takes numbers") != std::string::npos);
  auto not_sweep = kg::test::run_kgtrain({"fit", "-m", "--resume", dir / "nothing"});
  CHECK(not_sweep.exit_code == 2);
  CHECK(not_sweep.output.find("not a sweep folder") != std::string::npos);
  CHECK(kg::test::run_kgtrain({"fit", recipe, "--jobs", "2"}).exit_code == 2);
  CHECK(kg::test::run_kgtrain({"fit", "-m", recipe, "optim.lr=0.1,0.2", "--jobs", "0"}).exit_code == 2);
  CHECK(kg::test::run_kgtrain({"fit", "-m", recipe, "optim.lr=0.1,0.2", "--nproc", "2"}).exit_code == 2);
}

}  // namespace KG_UNITY_ID
}  // namespace
