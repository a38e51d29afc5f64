// A disk that fails under fit (tests/support/fault_inject.cpp, LD_PRELOAD): ENOSPC or EIO at the N-th write, fsync
// or rename is exit 3 naming the file, leaves every published checkpoint complete, and fit --resume then ends with
// the weights of a run the disk never failed. scripts/reliability.py injects at many more points.
#include <catch2/catch.hpp>

#include <filesystem>
#include <sstream>

#include "core/fs.h"
#include "support/fixtures.h"
#include "test_paths.h"
#include "train/checkpoint.h"

namespace {
namespace KG_UNITY_ID {  // each test file's own names in a unity batch (CMakeLists.txt)

namespace fs = std::filesystem;

namespace {

// kgtrain with the fault library preloaded and the given KGTRAIN_FAULT* variables.
kg::test::RunResult run_with_faults(std::vector<std::string> env, const std::vector<std::string>& args) {
  env.insert(env.begin(), std::string("LD_PRELOAD=") + KGTRAIN_FAULT_INJECT);
  return kg::test::run_kgtrain_env(env, args);
}

// Every published checkpoint folder under `run` (temp folders excluded) and what is wrong with it ("" = complete).
std::vector<std::pair<std::string, std::string>> published_checkpoints(const std::string& run) {
  std::vector<std::pair<std::string, std::string>> out;
  for (const auto& e : fs::recursive_directory_iterator(run))
    if (e.is_directory() && e.path().parent_path().filename() == "checkpoints" &&
        e.path().filename().string().rfind(".tmp-", 0) != 0)
      out.emplace_back(e.path().string(), kg::train::checkpoint_problem(e.path().string()));
  return out;
}

}  // namespace

TEST_CASE("a failing disk stops fit with exit 3 naming the file, checkpoints stay complete, --resume finishes",
          "[integration][resume]") {
  kg::test::TempDir dir;
  auto ds = kg::test::make_tiny_dataset(dir, 96, 8);
  const std::vector<std::string> overrides{"train.epochs=2", "train.checkpoint_every_steps=2",
                                           "device.deterministic=true"};
  auto fit = [&](const std::string& run) {
    std::vector<std::string> a{"fit", dir / "base.toml", "--run-dir", run, "--quiet"};
    a.insert(a.end(), overrides.begin(), overrides.end());
    return a;
  };
  dir.write("base.toml", kg::test::tiny_recipe(ds.root));
  auto ref = kg::test::run_kgtrain(fit(dir / "ref"));
  INFO(ref.output);
  REQUIRE(ref.exit_code == 0);
  const std::string want = kg::read_file(dir / "ref/checkpoints/last/model.safetensors");

  // How many writes, fsyncs and renames a run makes.
  auto counted = run_with_faults({"KGTRAIN_FAULT_COUNT=" + (dir / "count.txt")}, fit(dir / "counted"));
  REQUIRE(counted.exit_code == 0);
  std::map<std::string, long> calls;
  std::istringstream in(kg::read_file(dir / "count.txt"));
  for (std::string op; in >> op;) in >> calls[op];
  REQUIRE(calls["rename"] > 10);

  struct Fault {
    std::string spec, reason;
  };
  const std::vector<Fault> faults{
      {"write:1:ENOSPC:sticky", "No space left on device"},  // before the run has its folds.csv
      {"rename:" + std::to_string(calls["rename"] / 2) + ":ENOSPC:sticky", "No space left on device"},
      {"write:" + std::to_string(calls["write"] * 2 / 3) + ":EIO", "Input/output error"},
      {"fsync:" + std::to_string(calls["fsync"] / 3) + ":EIO", "Input/output error"}};
  for (size_t i = 0; i < faults.size(); ++i) {
    const std::string run = dir / ("run" + std::to_string(i));
    INFO("KGTRAIN_FAULT=" << faults[i].spec);
    auto r = run_with_faults({"KGTRAIN_FAULT=" + faults[i].spec}, fit(run));
    INFO(r.output);
    CHECK(r.exit_code == 3);
    CHECK_THAT(r.output, Catch::Contains(faults[i].reason) && Catch::Contains(run));
    for (const auto& [ck, problem] : published_checkpoints(run)) {
      INFO(ck);
      CHECK(problem == "");
    }
    std::vector<std::string> again{"fit", dir / "base.toml", "--resume", run};
    again.insert(again.end(), overrides.begin(), overrides.end());
    auto resumed = kg::test::run_kgtrain(again);
    INFO(resumed.output);
    REQUIRE(resumed.exit_code == 0);
    CHECK(kg::read_file(run + "/checkpoints/last/model.safetensors") == want);
    if (i == 0) CHECK_THAT(resumed.output, Catch::Contains("it stopped before its first update; starting it from"));
  }
}

}  // namespace KG_UNITY_ID
}  // namespace
