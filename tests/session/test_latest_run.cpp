// <paths.runs>/latest: the link fit keeps to its newest run (lib/session/latest_run.h), the word `latest` in place of a
// run folder (tta-predict / pseudo-label --from-run, fit --resume, interpret), and --from-run without a recipe.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <filesystem>
#include <memory>

#include "core/error.h"
#include "core/fs.h"
#include "session/latest_run.h"
#include "support/fixtures.h"
#include "support/job_helpers.h"

namespace {
namespace KG_UNITY_ID {  // each test file's own names in a unity batch (CMakeLists.txt)

namespace fs = std::filesystem;
using kg::session::point_latest;
using kg::session::resolve_latest;

TEST_CASE("latest: a relative link replaced atomically, resolved to the run folder", "[unit][jobs]") {
  kg::test::TempDir dir;
  const std::string root = dir / "runs";
  kg::make_directories(root + "/tiny/A");
  kg::make_directories(root + "/tiny/B");
  CHECK_THROWS_WITH(resolve_latest(root),
                    Catch::Contains("no run under " + root + " yet: run kgtrain fit first"));
  CHECK_THROWS_AS(resolve_latest(dir / "missing"), kg::UsageError);

  CHECK(point_latest(root, root + "/tiny/A") == "");
  REQUIRE(fs::is_symlink(root + "/latest"));
  CHECK(fs::read_symlink(root + "/latest") == "tiny/A");  // relative: the runs folder may move
  CHECK(fs::equivalent(resolve_latest(root), root + "/tiny/A"));
  CHECK(point_latest(root + "/", root + "/tiny/B") == "");
  CHECK(fs::read_symlink(root + "/latest") == "tiny/B");
  CHECK(fs::equivalent(resolve_latest(root), root + "/tiny/B"));
  for (auto& e : fs::directory_iterator(root)) CHECK(e.path().filename().string().rfind(".latest-", 0) != 0);

  SECTION("a folder outside the runs root is not linked") {
    CHECK_THAT(point_latest(root, dir / "elsewhere"), Catch::Contains("is not under"));
    CHECK(fs::read_symlink(root + "/latest") == "tiny/B");
  }
  SECTION("a run that was removed") {
    std::error_code ec;
    kg::remove_tree(root + "/tiny/B", ec);
    CHECK_THROWS_WITH(resolve_latest(root), Catch::Contains("no longer exists"));
  }
  SECTION("the text form (file systems without symbolic links) resolves the same") {
    fs::remove(root + "/latest");
    kg::write_file_atomic(root + "/latest", "tiny/A\n");
    CHECK(fs::equivalent(resolve_latest(root), root + "/tiny/A"));
  }
  SECTION("a real folder named latest (run.name = \"latest\") is left alone") {
    fs::remove(root + "/latest");
    kg::make_directories(root + "/latest/20260101-000000-fit");
    CHECK_THAT(point_latest(root, root + "/tiny/A"), Catch::Contains("is a folder"));
    CHECK(fs::is_directory(root + "/latest/20260101-000000-fit"));
    CHECK_THROWS_WITH(resolve_latest(root), Catch::Contains("is a folder"));
  }
}

namespace {
// One fit under a runs root of its own (no --run-dir), shared by the end-to-end cases.
struct LatestShared {
  kg::test::TempDir dir;
  kg::test::TinyDataset ds;
  std::string recipe, runs, runs_word;
  kg::test::RunResult fit;
  LatestShared() {
    ds = kg::test::make_tiny_dataset(dir, 32, 8);
    recipe = dir.write("tiny.toml", kg::test::tiny_recipe(ds.root));
    runs = dir / "runs";
    runs_word = "paths.runs=" + runs;
    fit = kg::test::run_kgtrain({"fit", recipe, runs_word, "train.epochs=1", "--quiet"});
  }
};
LatestShared& latest_shared() {
  static auto s = std::make_unique<LatestShared>();
  INFO(s->fit.output);
  REQUIRE(s->fit.exit_code == 0);
  return *s;
}
}  // namespace

TEST_CASE("latest: no run yet is a usage error naming the runs folder", "[integration][jobs]") {
  kg::test::TempDir dir;
  auto ds = kg::test::make_tiny_dataset(dir, 8, 4);
  const auto recipe = dir.write("tiny.toml", kg::test::tiny_recipe(ds.root));
  const std::string runs = dir / "empty_runs";
  for (auto args : std::vector<std::vector<std::string>>{
           {"tta-predict", recipe, "paths.runs=" + runs, "--from-run", "latest"},
           {"pseudo-label", recipe, "paths.runs=" + runs, "--from-run", "latest", "--out", dir / "p"},
           {"fit", recipe, "paths.runs=" + runs, "--resume", "latest"},
           {"interpret", "latest", "paths.runs=" + runs}}) {
    auto r = kg::test::run_kgtrain(args);
    INFO(args[0] << ": " << r.output);
    CHECK(r.exit_code == 2);
    CHECK_THAT(r.output, Catch::Contains("no run under " + runs + " yet: run kgtrain fit first"));
  }
}

TEST_CASE("latest: fit links its run, and tta-predict, fit --resume and interpret take the word",
          "[integration][jobs]") {
  auto& s = latest_shared();
  REQUIRE(fs::is_symlink(s.runs + "/latest"));
  const fs::path run = fs::read_symlink(s.runs + "/latest");
  CHECK(run.begin()->string() == "tiny");
  CHECK(run.filename().string().find("-fit") != std::string::npos);
  const std::string run_dir = (fs::path(s.runs) / run).string();
  REQUIRE(fs::exists(run_dir + "/summary.json"));

  const std::string out = s.dir / "sub.csv";
  auto p = kg::test::run_kgtrain({"tta-predict", s.recipe, s.runs_word, "--from-run", "latest", "--out", out});
  INFO(p.output);
  REQUIRE(p.exit_code == 0);
  CHECK_THAT(p.output, Catch::Contains("latest: " + run_dir));
  CHECK(fs::exists(out));
  // tta-predict made a run folder of its own; latest still names the fit.
  CHECK(fs::read_symlink(s.runs + "/latest") == run);

  auto i = kg::test::run_kgtrain({"interpret", "latest", s.runs_word, "--top", "2"});
  INFO(i.output);
  CHECK(i.exit_code == 0);
  CHECK_THAT(i.output, Catch::Contains("latest: " + run_dir));
  CHECK(fs::exists(run_dir + "/interpret/interpret.json"));

  // A second fit moves the link; --resume latest finds that one (finished: nothing left to train).
  auto f2 = kg::test::run_kgtrain({"fit", s.recipe, s.runs_word, "train.epochs=1", "--quiet"});
  REQUIRE(f2.exit_code == 0);
  const fs::path run2 = fs::read_symlink(s.runs + "/latest");
  CHECK(run2 != run);
  auto r = kg::test::run_kgtrain({"fit", "--resume", "latest", s.runs_word});
  INFO(r.output);
  CHECK(r.exit_code == 0);
  CHECK_THAT(r.output, Catch::Contains("latest: " + (fs::path(s.runs) / run2).string()));
}

TEST_CASE("latest: fit --run-dir leaves the link alone", "[integration][jobs]") {
  auto& s = latest_shared();
  const fs::path before = fs::read_symlink(s.runs + "/latest");
  auto r = kg::test::run_kgtrain(
      {"fit", s.recipe, s.runs_word, "train.epochs=1", "--run-dir", s.runs + "/tiny/explicit", "--quiet"});
  REQUIRE(r.exit_code == 0);
  CHECK(fs::read_symlink(s.runs + "/latest") == before);
}

TEST_CASE("tta-predict and pseudo-label --from-run without a recipe use the run's recipe.toml", "[integration][jobs]") {
  auto& s = latest_shared();
  const std::string with = s.dir / "with_recipe.csv", without = s.dir / "without_recipe.csv";
  auto a = kg::test::run_kgtrain({"tta-predict", s.recipe, s.runs_word, "--from-run", "latest", "--out", with, "-q"});
  INFO(a.output);
  REQUIRE(a.exit_code == 0);
  auto b = kg::test::run_kgtrain({"tta-predict", "--from-run", "latest", s.runs_word, "--out", without, "-q"});
  INFO(b.output);
  REQUIRE(b.exit_code == 0);
  CHECK(kg::read_file(without) == kg::read_file(with));

  // Overrides still apply on top of the run's recipe.
  auto c = kg::test::run_kgtrain({"tta-predict", "--from-run", "latest", s.runs_word,
                                  "tta.views=[\"identity\", \"hflip\"]", "--run-dir", s.dir / "pred_views", "-q"});
  INFO(c.output);
  REQUIRE(c.exit_code == 0);
  CHECK(kg::test::read_json(s.dir / "pred_views/summary.json")["views"].size() == 2);

  auto p = kg::test::run_kgtrain(
      {"pseudo-label", "--from-run", "latest", s.runs_word, "pseudo.threshold=0", "--out", s.dir / "pl", "-q"});
  INFO(p.output);
  CHECK(p.exit_code == 0);
  CHECK(fs::exists(s.dir / "pl/pseudo.csv"));

  for (auto args : std::vector<std::vector<std::string>>{{"tta-predict", "--checkpoint", s.dir / "nowhere"},
                                                         {"tta-predict"},
                                                         {"pseudo-label", "--out", s.dir / "pl2"}}) {
    auto r = kg::test::run_kgtrain(args);
    INFO(r.output);
    CHECK(r.exit_code == 2);
    CHECK_THAT(r.output, Catch::Contains("needs RECIPE.toml files (or --from-run RUN"));
  }
}

TEST_CASE("tta-predict's submission: --out, else paths.submission (the kaggle layer's), else the run folder",
          "[integration][jobs]") {
  auto& s = latest_shared();
  auto show = kg::test::run_kgtrain({"show", s.recipe, "env=kaggle"});
  REQUIRE(show.exit_code == 0);
  CHECK_THAT(show.output, Catch::Contains("paths.submission = \"/kaggle/working/submission.csv\"  # env layer kaggle"));

  const std::string key_path = s.dir / "kaggle_working/submission.csv";
  auto k = kg::test::run_kgtrain({"tta-predict", "--from-run", "latest", s.runs_word, "paths.submission=" + key_path,
                                  "--run-dir", s.dir / "pred_key"});
  INFO(k.output);
  REQUIRE(k.exit_code == 0);
  CHECK(fs::exists(key_path));
  CHECK(!fs::exists(s.dir / "pred_key/submission.csv"));
  CHECK_THAT(k.output, Catch::Contains("submission: " + key_path + " (8 rows; paths.submission)"));

  const std::string out = s.dir / "given.csv";
  auto o = kg::test::run_kgtrain({"tta-predict", "--from-run", "latest", s.runs_word, "paths.submission=" + key_path,
                                  "--out", out, "--run-dir", s.dir / "pred_out"});
  REQUIRE(o.exit_code == 0);
  CHECK_THAT(o.output, Catch::Contains("submission: " + out + " (8 rows; --out)"));
  CHECK(kg::read_file(out) == kg::read_file(key_path));

  auto d = kg::test::run_kgtrain({"tta-predict", "--from-run", "latest", s.runs_word, "--run-dir", s.dir / "pred_d"});
  REQUIRE(d.exit_code == 0);
  CHECK_THAT(d.output, Catch::Contains("submission: " + s.dir / "pred_d/submission.csv (8 rows; default)"));
}

}  // namespace KG_UNITY_ID
}  // namespace
