// A text fit with issue 54's tricks at once -- FGM on the word embeddings, the top layer re-initialised, multi-sample
// dropout with a dropout the RNG draws every step -- killed by SIGKILL in its second epoch resumes to the
// uninterrupted run's exact bytes (checkpoints/last and the per-epoch metrics), as an image fit does
// (tests/jobs/test_resume.cpp).
#include <catch2/catch.hpp>

#include <csignal>
#include <filesystem>

#include <nlohmann/json.hpp>

#include "core/fs.h"
#include "support/fixtures.h"
#include "support/job_helpers.h"
#include "support/process.h"
#include "support/text_fixtures.h"

namespace {
namespace KG_UNITY_ID {  // each test file's own names in a unity batch (CMakeLists.txt)

using nlohmann::json;

std::vector<json> metrics_lines(const std::string& run) { return kg::test::read_jsonl(run + "/metrics.jsonl"); }

TEST_CASE("a text fit with FGM, reinit_layers and multi-sample dropout killed by SIGKILL resumes exactly",
          "[integration][jobs][text][resume]") {
  kg::test::TempDir dir;
  const std::string data = kg::test::make_tiny_text_task(dir, 48, 8);
  const std::string model = kg::test::make_tiny_deberta(dir);
  const std::string recipe = dir.write("text.toml", kg::test::tiny_text_recipe(data, model));
  auto args = [&](const std::string& run, std::vector<std::string> extra) {
    std::vector<std::string> a{"fit",
                               recipe,
                               "paths.runs=" + dir / "runs",
                               "train.epochs=3",
                               "train.checkpoint_every_steps=1",
                               "train.adversarial.kind=fgm",
                               "train.adversarial.eps=0.1",
                               "model.reinit_layers=1",
                               "model.multi_sample_dropout.samples=3",
                               "model.multi_sample_dropout.p=0.3",
                               "--run-dir",
                               run};
    a.insert(a.end(), extra.begin(), extra.end());
    return a;
  };
  const std::string ref = dir / "ref", run = dir / "killed";
  auto r = kg::test::run_kgtrain(args(ref, {"--quiet"}));
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  const int64_t target = metrics_lines(ref).front()["step"].get<int64_t>() + 1;  // inside epoch 2
  int status = 0;
  pid_t pid = kg::test::spawn(args(run, {}), run + ".log");
  REQUIRE(pid > 0);
  REQUIRE(kg::test::signal_when(
      pid, [&] { return kg::test::last_step(run) >= target; }, SIGKILL, 0, status));
  auto resumed = kg::test::run_kgtrain(args(run, {"--resume", run}));
  INFO(resumed.output);
  REQUIRE(resumed.exit_code == 0);
  CHECK(resumed.output.find("resumed from") != std::string::npos);
  for (const char* f : {"model.safetensors", "state.safetensors"})
    CHECK(kg::read_file(ref + "/checkpoints/last/" + f) == kg::read_file(run + "/checkpoints/last/" + f));
  const auto a = metrics_lines(ref), b = metrics_lines(run);
  REQUIRE(a.size() == 3);
  REQUIRE(b.size() == 3);
  for (size_t i = 0; i < a.size(); ++i) {
    CHECK(a[i]["valid_loss"].get<double>() == b[i]["valid_loss"].get<double>());
    CHECK(a[i]["accuracy"].get<double>() == b[i]["accuracy"].get<double>());
  }
  CHECK(kg::read_file(ref + "/oof_fold.csv") == kg::read_file(run + "/oof_fold.csv"));
}

}  // namespace KG_UNITY_ID
}  // namespace
