// End to end through the real binary: fit on a tiny PNG dataset, then tta-predict its checkpoint.
#include <catch2/catch.hpp>

#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "core/fs.h"
#include "data/csv.h"
#include "support/fixtures.h"
#include "test_paths.h"

namespace {
namespace KG_UNITY_ID {  // each test file's own names in a unity batch (CMakeLists.txt)

using nlohmann::json;
namespace fs = std::filesystem;

namespace {
json read_json(const std::string& path) { return json::parse(kg::read_file(path)); }
}  // namespace

TEST_CASE("fit then tta-predict on a tiny dataset", "[integration][jobs]") {
  kg::test::TempDir dir;
  auto ds = kg::test::make_tiny_dataset(dir, 96, 18);
  auto recipe = dir.write("tiny.toml", kg::test::tiny_recipe(ds.root));
  std::string run = dir / "run";

  auto fit = kg::test::run_kgtrain({"fit", recipe, "--run-dir", run, "--quiet"});
  INFO(fit.output);
  REQUIRE(fit.exit_code == 0);
  for (auto f : {"recipe.toml", "provenance.json", "metrics.jsonl", "summary.json", "classes.json", "folds.csv",
                 "checkpoints/best/model.safetensors", "checkpoints/best/state.json", "checkpoints/best/recipe.toml",
                 "checkpoints/last/model.safetensors"})
    CHECK(fs::exists(fs::path(run) / f));
  auto summary = read_json(run + "/summary.json");
  CHECK(summary["status"] == "completed");
  CHECK(summary["epochs_completed"] == 3);
  CHECK(summary["schema_version"] == 1);
  CHECK(summary["train_images_per_s"].get<double>() > 0);
  CHECK(summary["best"]["value"].get<double>() >= 0.9);  // a trivially separable task
  // The model summary the log prints (docs/commands.md: summary.json's model block).
  CHECK(summary["model"]["name"] == "resnet9");
  CHECK(summary["model"]["parameters"]["total"].get<int64_t>() > 1000);
  CHECK(summary["model"]["gflops_per_image"].get<double>() > 0);
  CHECK(summary["model"]["channels_last"] == false);

  auto metrics = kg::read_file(run + "/metrics.jsonl");
  CHECK(std::count(metrics.begin(), metrics.end(), '\n') == 3);
  auto first = json::parse(metrics.substr(0, metrics.find('\n')));
  for (auto k : {"epoch", "step", "lr", "train_loss", "valid_loss", "accuracy", "train_images_per_s", "elapsed_s"})
    CHECK(first.contains(k));
  CHECK(first["step"] == 9);  // 72 training rows / batch 8

  auto prov = read_json(run + "/provenance.json");
  CHECK(prov["keys"]["optim.lr"].get<std::string>().find("tiny.toml:") != std::string::npos);
  CHECK(prov["keys"]["metric.monitor"] == "default");

  SECTION("tta-predict writes the submission in the sample's order and scores labeled rows") {
    std::string sub = dir / "submission.csv", probs = dir / "probs.csv";
    auto pred = kg::test::run_kgtrain({"tta-predict", recipe, "data.test_csv=test_labels.csv", "--checkpoint",
                                       run + "/checkpoints/best", "--checkpoint", run + "/checkpoints/last", "--out",
                                       sub, "--probs", probs, "--run-dir", dir / "pred", "--quiet"});
    INFO(pred.output);
    REQUIRE(pred.exit_code == 0);
    auto s = kg::data::read_csv(sub);
    auto sample = kg::data::read_csv(ds.root + "/sample_submission.csv");
    REQUIRE(s.header == sample.header);
    REQUIRE(s.rows.size() == sample.rows.size());
    for (size_t i = 0; i < s.rows.size(); ++i) CHECK(s.rows[i][0] == sample.rows[i][0]);
    auto truth = kg::data::read_csv(ds.root + "/test_labels.csv");
    std::map<std::string, std::string> label;
    for (auto& r : truth.rows) label[r[0]] = r[1];
    int correct = 0;
    for (auto& r : s.rows) correct += label[r[0]] == r[1];
    double acc = static_cast<double>(correct) / static_cast<double>(s.rows.size());
    CHECK(acc >= 0.8);
    auto ps = read_json(dir / "pred/summary.json");
    CHECK(ps["metric"]["value"].get<double>() == Approx(acc));
    auto p = kg::data::read_csv(probs);
    CHECK(p.header == std::vector<std::string>{"id", "left", "right"});
    for (auto& r : p.rows) CHECK(std::stod(r[1]) + std::stod(r[2]) == Approx(1.0).epsilon(1e-4));
  }

  SECTION("a second fit into the same run dir is refused") {
    auto again = kg::test::run_kgtrain({"fit", recipe, "--run-dir", run, "--quiet"});
    CHECK(again.exit_code == 2);
    CHECK(again.output.find("never overwrites") != std::string::npos);
  }

  SECTION("equal training gives equal weight files") {
    auto fit2 = kg::test::run_kgtrain({"fit", recipe, "--run-dir", dir / "run2", "--quiet", "data.num_workers=0"});
    REQUIRE(fit2.exit_code == 0);
    CHECK(kg::read_file(run + "/checkpoints/last/model.safetensors") ==
          kg::read_file(dir / "run2/checkpoints/last/model.safetensors"));
  }
}

TEST_CASE("bad inputs stop fit with clear messages and exit codes", "[integration][jobs]") {
  kg::test::TempDir dir;
  auto ds = kg::test::make_tiny_dataset(dir, 16, 4);
  auto recipe = dir.write("tiny.toml", kg::test::tiny_recipe(ds.root));

  SECTION("a misspelled key on the command line: exit 2 with a suggestion") {
    auto r = kg::test::run_kgtrain({"fit", recipe, "optim.lrr=1e-3", "--quiet"});
    CHECK(r.exit_code == 2);
    CHECK(r.output.find("optim.lrr") != std::string::npos);
    CHECK(r.output.find("did you mean optim.lr") != std::string::npos);
    CHECK(r.output.find("command line") != std::string::npos);
  }
  SECTION("a misspelled key in a recipe file is reported with file:line:column") {
    auto bad = dir.write("bad.toml", "extends = [\"tiny.toml\"]\n[model]\nwidht = 8\n");
    auto r = kg::test::run_kgtrain({"fit", bad, "--dry-run"});
    CHECK(r.exit_code == 2);
    CHECK(r.output.find("model.widht") != std::string::npos);
    CHECK(r.output.find("bad.toml:3:") != std::string::npos);
    CHECK(r.output.find("did you mean model.width") != std::string::npos);
  }
  SECTION("a missing image: exit 3 naming the CSV row and the path") {
    fs::remove(ds.root + "/train/tr5.png");
    auto r = kg::test::run_kgtrain({"fit", recipe, "--run-dir", dir / "r", "--quiet"});
    CHECK(r.exit_code == 3);
    CHECK(r.output.find("row 6") != std::string::npos);
    CHECK(r.output.find("tr5.png") != std::string::npos);
    CHECK_FALSE(fs::exists(dir / "r/summary.json"));
  }
  SECTION("an undecodable image: exit 3") {
    kg::write_file_atomic(ds.root + "/train/tr2.png", "not a png");
    auto r = kg::test::run_kgtrain({"fit", recipe, "--dry-run"});
    CHECK(r.exit_code == 3);
    CHECK(r.output.find("tr2") != std::string::npos);
  }
  SECTION("a label outside data.num_classes: exit 3 with the row") {
    kg::write_file_atomic(ds.root + "/train.csv", "id,label\ntr0,0\ntr1,1\ntr2,7\ntr3,1\n");
    auto r = kg::test::run_kgtrain({"fit", recipe, "data.num_classes=2", "--dry-run"});
    CHECK(r.exit_code == 3);
    CHECK(r.output.find("row 3") != std::string::npos);
    CHECK(r.output.find("\"7\"") != std::string::npos);
  }
  SECTION("a checkpoint that is not one: exit 3") {
    auto r = kg::test::run_kgtrain({"tta-predict", recipe, "--checkpoint", dir / "nowhere", "--quiet"});
    CHECK(r.exit_code == 3);
    CHECK(r.output.find("nowhere") != std::string::npos);
  }
  SECTION("usage errors: exit 2") {
    CHECK(kg::test::run_kgtrain({"fit"}).exit_code == 2);
    CHECK(kg::test::run_kgtrain({"frobnicate"}).exit_code == 2);
    CHECK(kg::test::run_kgtrain({"fit", recipe, "cv.fold=9", "--dry-run"}).exit_code == 2);
  }
}

TEST_CASE("fit --smoke runs the whole recipe on a few batches", "[integration][jobs]") {
  kg::test::TempDir dir;
  auto ds = kg::test::make_tiny_dataset(dir, 96, 40);
  auto recipe = dir.write("tiny.toml", kg::test::tiny_recipe(ds.root));
  auto r =
      kg::test::run_kgtrain({"fit", recipe, "--smoke", "--run-dir", dir / "s", "--quiet", "train.eval_batch_size=4"});
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  auto s = json::parse(kg::read_file(dir / "s/summary.json"));
  CHECK(s["smoke"] == true);
  CHECK(s["epochs_completed"] == 1);
  CHECK(s["smoke_predictions"] == 8);
  auto m = json::parse(kg::read_file(dir / "s/metrics.jsonl"));
  CHECK(m["step"] == 2);
  SECTION("a warm-up in epochs is cut to fit the 2 smoke updates; one longer than the real run still fails") {
    auto w = kg::test::run_kgtrain({"fit", recipe, "--smoke", "--run-dir", dir / "w", "--quiet",
                                    "train.eval_batch_size=4", "schedule.name=cosine", "schedule.warmup_epochs=1"});
    INFO(w.output);
    CHECK(w.exit_code == 0);
    auto bad = kg::test::run_kgtrain({"fit", recipe, "--smoke", "--run-dir", dir / "b", "--quiet", "train.epochs=2",
                                      "schedule.name=cosine", "schedule.warmup_epochs=3"});
    CHECK(bad.exit_code == 2);
    CHECK(bad.output.find("schedule.warmup_epochs") != std::string::npos);
  }
}

TEST_CASE("SIGTERM and SIGINT save checkpoints/last and exit 143 / 130", "[integration][jobs]") {
  for (int sig : {SIGTERM, SIGINT}) {
    kg::test::TempDir dir;
    auto ds = kg::test::make_tiny_dataset(dir, 64, 4);
    auto recipe = dir.write("tiny.toml", kg::test::tiny_recipe(ds.root));
    std::string run = dir / "run";
    std::vector<std::string> args{KGTRAIN_BINARY, "fit", recipe, "train.epochs=100000", "--run-dir", run, "--quiet"};
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    pid_t pid = fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
      freopen("/dev/null", "w", stderr);
      execv(argv[0], argv.data());
      _exit(127);
    }
    // Wait until training is under way (the first epoch's metrics are written), then signal.
    for (int i = 0; i < 600 && !fs::exists(run + "/metrics.jsonl"); ++i) usleep(50 * 1000);
    REQUIRE(fs::exists(run + "/metrics.jsonl"));
    kill(pid, sig);
    int status = 0;
    waitpid(pid, &status, 0);
    REQUIRE(WIFEXITED(status));
    CHECK(WEXITSTATUS(status) == (sig == SIGTERM ? 143 : 130));
    auto s = read_json(run + "/summary.json");
    CHECK(s["status"] == "interrupted");
    CHECK(s["epochs_completed"].get<int>() >= 1);
    CHECK(fs::exists(run + "/checkpoints/last/state.json"));
    CHECK(fs::exists(run + "/checkpoints/last/model.safetensors"));
  }
}

}  // namespace KG_UNITY_ID
}  // namespace
