// End to end through the real binary: log.loggers = metrics.jsonl + metrics.csv + TensorBoard event files,
// read back without Python (tests/support/tb_reader.h) and compared with metrics.jsonl, across a
// SIGTERM + --resume; the [log] section's checks. scripts/check_tensorboard.py does the same with
// TensorBoard's own reader on a Fashion-MNIST run.
#include <catch2/catch.hpp>

#include <filesystem>
#include <sstream>

#include "core/error.h"
#include "core/fs.h"
#include "data/csv.h"
#include "support/fixtures.h"
#include "support/job_helpers.h"
#include "support/process.h"
#include "support/tb_reader.h"

namespace {
namespace KG_UNITY_ID {  // each test file's own names in a unity batch (CMakeLists.txt)

using nlohmann::json;
namespace fs = std::filesystem;

namespace {

std::vector<json> jsonl(const std::string& path) {
  std::vector<json> out;
  std::istringstream in(kg::read_file(path));
  for (std::string l; std::getline(in, l);) out.push_back(json::parse(l));
  return out;
}

// Every number of every metrics.jsonl line is TensorBoard's epoch/<key> at the line's step.
void check_epoch_scalars(const std::string& run, const kg::test::TbRun& tb) {
  const auto lines = jsonl(run + "/metrics.jsonl");
  REQUIRE(!lines.empty());
  for (auto& line : lines)
    for (auto& [k, v] : line.items()) {
      if (k == "step" || !v.is_number()) continue;
      INFO("epoch " << line["epoch"] << " key " << k);
      const auto& series = tb.scalars.at("epoch/" + k);
      const auto it = series.find(line["step"].get<int64_t>());
      REQUIRE(it != series.end());
      CHECK(it->second == static_cast<float>(v.get<double>()));
    }
}

const std::vector<std::string> kTensorBoard{"log.loggers=[\"jsonl\", \"csv\", \"tensorboard\"]"};

}  // namespace

TEST_CASE("fit logs to metrics.csv and TensorBoard event files equal to metrics.jsonl", "[integration][jobs]") {
  kg::test::TempDir dir;
  auto ds = kg::test::make_tiny_dataset(dir, 96, 8);
  auto recipe = dir.write("tiny.toml", kg::test::tiny_recipe(ds.root));
  const std::string run = dir / "run";
  auto fit = kg::test::run_kgtrain(
      kg::test::cat({"fit", recipe, "log.every_n_steps=2", "--run-dir", run, "--quiet"}, kTensorBoard));
  INFO(fit.output);
  REQUIRE(fit.exit_code == 0);

  const auto lines = jsonl(run + "/metrics.jsonl");
  auto csv = kg::data::read_csv(run + "/metrics.csv");
  REQUIRE(csv.rows.size() == lines.size());
  CHECK(csv.header[0] == "epoch");
  CHECK(csv.header[1] == "step");
  for (size_t i = 0; i < lines.size(); ++i)
    for (size_t c = 0; c < csv.header.size(); ++c) {
      INFO("row " << i << " column " << csv.header[c]);
      // A key an epoch's line lacks ("best" when it did not improve) is an empty field. Looking it up in a const
      // json with operator[] is undefined behaviour: CI's build read garbage there.
      if (!lines[i].contains(csv.header[c])) {
        CHECK(csv.rows[i][c].empty());
        continue;
      }
      const auto& v = lines[i].at(csv.header[c]);
      if (v.is_number()) CHECK(std::stod(csv.rows[i][c]) == v.get<double>());  // %.17g round-trips
      if (v.is_string()) CHECK(csv.rows[i][c] == v.get<std::string>());
    }

  const auto tb = kg::test::read_tb_dir(run);
  CHECK(tb.files == 1);
  CHECK(tb.restarts.empty());
  check_epoch_scalars(run, tb);
  // 72 training rows / batch 8 = 9 updates per epoch: the first update, then every 2nd.
  std::vector<int64_t> steps;
  for (auto& [s, v] : tb.scalars.at("train/loss")) steps.push_back(s);
  CHECK(steps.front() == 1);
  CHECK(steps.size() == 1 + 27 / 2);
  for (auto tag : {"train/lr", "train/grad_norm", "train/images_per_s"})
    CHECK(tb.scalars.at(tag).size() == steps.size());
  CHECK(tb.scalars.at("train/lr").at(1) > 0);
  // The first training batch as the network sees it, in the run folder and in TensorBoard.
  REQUIRE(fs::exists(run + "/samples.png"));
  CHECK(tb.images.at("samples") == kg::read_file(run + "/samples.png"));
  CHECK(std::count(tb.plugin_tags.begin(), tb.plugin_tags.end(), "_hparams_/session_start_info") == 1);
  CHECK(std::count(tb.plugin_tags.begin(), tb.plugin_tags.end(), "_hparams_/session_end_info") == 1);
}

TEST_CASE("a resumed run's TensorBoard file drops what the stopped process logged after its checkpoint",
          "[integration][resume]") {
  kg::test::TempDir dir;
  auto ds = kg::test::make_tiny_dataset(dir, 96, 8);
  auto recipe = dir.write("tiny.toml", kg::test::tiny_recipe(ds.root));
  const std::string run = dir / "run", log = dir / "fit.log";
  const auto args = kg::test::cat(
      {"fit", recipe, "log.every_n_steps=1", "train.checkpoint_every_steps=1", "--run-dir", run}, kTensorBoard);
  int status = 0;
  const pid_t pid = kg::test::spawn(args, log);
  REQUIRE(kg::test::signal_when(
      pid, [&] { return kg::test::last_step(run) >= 12; }, SIGTERM, 0, status));
  INFO(kg::read_file(log));
  REQUIRE(WEXITSTATUS(status) == 143);
  const int64_t saved = kg::test::last_step(run);
  auto resumed = kg::test::run_kgtrain(kg::test::cat(args, {"--resume", run, "--quiet"}));
  INFO(resumed.output);
  REQUIRE(resumed.exit_code == 0);

  const auto tb = kg::test::read_tb_dir(run);
  CHECK(tb.files == 2);
  CHECK(tb.restarts == std::vector<int64_t>{saved + 1});
  // Every update exactly once: the stopped process's steps up to its checkpoint, the resumed one's after it.
  const auto& loss = tb.scalars.at("train/loss");
  CHECK(loss.size() == 27);
  CHECK(loss.begin()->first == 1);
  CHECK(loss.rbegin()->first == 27);
  check_epoch_scalars(run, tb);
}

TEST_CASE("log.loggers: unknown loggers and a list without jsonl are recipe errors", "[unit][config]") {
  kg::test::TempDir dir;
  const std::string recipe = dir.write("tiny.toml", kg::test::tiny_recipe(dir / "data"));
  auto problem = [&](const std::string& value) {
    try {
      kg::test::resolve_recipe({recipe}, {"log.loggers=" + value});
    } catch (const kg::ConfigError& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  CHECK(problem("[\"jsonl\", \"wandb\"]").find("unknown logger \"wandb\"") != std::string::npos);
  CHECK(problem("[\"csv\"]").find("\"jsonl\" must stay in the list") != std::string::npos);
  CHECK(problem("[\"jsonl\", \"tensorboard\"]").empty());
  CHECK_THROWS_AS(kg::test::resolve_recipe({recipe}, {"log.every_n_steps=0"}), kg::ConfigError);
}

}  // namespace KG_UNITY_ID
}  // namespace
