// Two processes, one run: while a fit writes a run folder, a second fit on it (--resume or --run-dir), and
// readers of it (tta-predict --from-run, interpret), are refused at once naming the holder; a SIGKILL leaves no
// stale lock, so --resume then continues.
#include <catch2/catch.hpp>

#include <csignal>
#include <filesystem>

#include "core/error.h"
#include "core/fs.h"
#include "core/run_lock.h"
#include "support/fixtures.h"
#include "support/job_helpers.h"
#include "support/process.h"

namespace {
namespace KG_UNITY_ID {  // each test file's own names in a unity batch (CMakeLists.txt)

TEST_CASE("a run folder in use by one process is refused to a second, and a killed holder leaves no lock",
          "[integration][resume]") {
  kg::test::TempDir dir;
  auto ds = kg::test::make_tiny_dataset(dir, 64, 8);
  auto recipe = dir.write("tiny.toml", kg::test::tiny_recipe(ds.root));
  const std::string run = dir / "run";
  int status = 0;
  const pid_t pid =
      kg::test::spawn({"fit", recipe, "train.checkpoint_every_steps=1", "--run-dir", run}, dir / "fit.log");
  REQUIRE(kg::test::wait_until(
      pid, [&] { return kg::test::last_step(run) >= 2; }, status));
  ::kill(pid, SIGSTOP);  // paused mid-run: alive, holding its run folder
  const std::string holder = "is in use by kgtrain fit (pid " + std::to_string(pid) + ")";
  auto resume = kg::test::run_kgtrain({"fit", "--resume", run, "--quiet"});
  CHECK(resume.exit_code == 2);
  CHECK(resume.output.find(holder) != std::string::npos);
  auto again = kg::test::run_kgtrain({"fit", recipe, "--run-dir", run, "--quiet"});
  CHECK(again.exit_code == 2);
  CHECK(again.output.find(holder) != std::string::npos);
  auto predict = kg::test::run_kgtrain({"tta-predict", recipe, "--from-run", run, "--out", dir / "sub.csv", "--quiet"});
  CHECK(predict.exit_code == 2);
  CHECK(predict.output.find("still being written") != std::string::npos);
  CHECK(kg::test::run_kgtrain({"interpret", run, "--quiet"}).exit_code == 2);
  ::kill(pid, SIGKILL);
  kg::test::wait_status(pid);
  // The kernel dropped the lock with the process: the run continues.
  auto resumed = kg::test::run_kgtrain({"fit", "--resume", run, "--quiet"});
  INFO(resumed.output);
  CHECK(resumed.exit_code == 0);
  CHECK(kg::test::read_json(run + "/summary.json")["status"] == "completed");
  CHECK(kg::test::run_kgtrain({"interpret", run, "--quiet"}).exit_code == 0);
}

TEST_CASE("lock_run_dir: a folder this process holds is taken again without a conflict", "[unit][core]") {
  kg::test::TempDir dir;
  kg::lock_run_dir(dir.path().string(), "fit");
  CHECK_NOTHROW(kg::lock_run_dir(dir.path().string(), "fit"));
  CHECK_NOTHROW(kg::lock_run_dir(dir.path().string() + "/.", "tta-predict", kg::LockMode::shared));
  CHECK(std::filesystem::exists(dir.path().string() + "/.kgtrain.lock"));
  CHECK(kg::read_file(dir.path().string() + "/.kgtrain.lock").find("kgtrain fit (pid") == 0);
  CHECK_THROWS_AS(kg::lock_run_dir(dir.path().string() + "/missing", "fit"), kg::DataError);
}

}  // namespace KG_UNITY_ID
}  // namespace
