// The data pipeline end to end through the binary: an unseen CSV layout, pack + fit from the pack,
// bad-row policies, progressive resizing with mixup and the RAM cache, tasks fit cannot train yet.
#include <catch2/catch.hpp>

#include <filesystem>
#include <nlohmann/json.hpp>

#include <opencv2/core.hpp>

#include "core/fs.h"
#include "core/random.h"
#include "core/strings.h"
#include "data/csv.h"
#include "data/image_io.h"
#include "support/fixtures.h"

namespace {
namespace KG_UNITY_ID {  // each test file's own names in a unity batch (CMakeLists.txt)

using nlohmann::json;
namespace fs = std::filesystem;

namespace {

// "left"/"right" images (bright half), in sub-folders, named by a path column.
void make_unseen_layout(const std::string& root, int n) {
  kg::Rng rng(5);
  std::string csv =
      "\xEF\xBB\xBF"
      "file_name,Species Name,notes\r\n";
  for (int i = 0; i < n; ++i) {
    bool right = i % 2;
    cv::Mat m(12, 12, CV_8UC3);
    for (int y = 0; y < 12; ++y)
      for (int x = 0; x < 12; ++x)
        m.at<cv::Vec3b>(y, x) = cv::Vec3b::all(static_cast<uint8_t>(((x >= 6) == right ? 180 : 40) + rng.below(40)));
    std::string rel = "batch" + std::to_string(i % 3) + "/img_" + std::to_string(i) + ".png";
    kg::data::write_png_atomic(root + "/photos/" + rel, m);
    csv += rel + "," + (right ? "\"right, bright\"" : "left") + ",\"say \"\"x\"\", ok\"\r\n";
  }
  kg::write_file_atomic(root + "/meta/labels.csv", csv + "\r\n");
}

std::string metrics_of(const std::string& run) { return kg::read_file(run + "/metrics.jsonl"); }

}  // namespace

TEST_CASE("an unseen layout trains from a recipe that only names its columns", "[integration][jobs]") {
  kg::test::TempDir dir;
  const std::string root = dir / "comp";
  make_unseen_layout(root, 64);
  auto recipe =
      dir.write("unseen.toml", "[data]\nroot = \"" + root +
                                   "\"\ntrain_csv = \"meta/labels.csv\"\nimage_dir = \"photos\"\n"
                                   "id_col = \"file_name\"\npath_col = \"file_name\"\nlabel_cols = [\"Species Name\"]\n"
                                   "image_size = 12\n[model]\nwidth = 4\n[train]\nepochs = 3\nbatch_size = 8\n"
                                   "[optim]\nlr = 0.02\n[cv]\nfolds = 4\n[device]\nthreads = 1\n");
  auto r = kg::test::run_kgtrain({"fit", recipe, "--run-dir", dir / "run", "--quiet"});
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  auto classes = json::parse(kg::read_file(dir / "run/classes.json"));
  CHECK(classes["names"] == json::array({"left", "right, bright"}));
  auto summary = json::parse(kg::read_file(dir / "run/summary.json"));
  CHECK(summary["best"]["value"].get<double>() >= 0.9);
  auto folds = kg::data::read_csv(dir / "run/folds.csv");
  CHECK(folds.rows.size() == 64);
  CHECK(folds.rows[0][0] == "batch0/img_0.png");
}

TEST_CASE("kgtrain pack, then fit from the pack trains exactly as from loose files", "[integration][jobs]") {
  kg::test::TempDir dir;
  auto ds = kg::test::make_tiny_dataset(dir, 48, 8);
  auto recipe = dir.write("tiny.toml", kg::test::tiny_recipe(ds.root));
  auto p = kg::test::run_kgtrain({"pack", recipe, "--split", "both"});
  INFO(p.output);
  REQUIRE(p.exit_code == 0);
  REQUIRE(fs::exists(ds.root + "/train.kgpack"));
  REQUIRE(fs::exists(ds.root + "/test.kgpack"));
  CHECK(p.output.find("packed 48 training images") != std::string::npos);

  auto loose = kg::test::run_kgtrain({"fit", recipe, "--run-dir", dir / "loose", "--quiet", "train.epochs=2"});
  REQUIRE(loose.exit_code == 0);
  // Move the images away: the packed run must not open them.
  fs::rename(ds.root + "/train", ds.root + "/train_moved");
  auto packed = kg::test::run_kgtrain(
      {"fit", recipe, "data.format=pack", "--run-dir", dir / "packed", "--quiet", "train.epochs=2"});
  INFO(packed.output);
  REQUIRE(packed.exit_code == 0);
  // Same bytes, same stream (seed, epoch, row): the same losses, bit for bit, apart from timings.
  auto strip = [](std::string m) {
    std::string out;
    for (auto& line : kg::split(m, '\n')) {
      if (line.empty()) continue;
      auto j = json::parse(line);
      j.erase("train_images_per_s");
      j.erase("elapsed_s");
      j.erase("epoch_seconds");
      out += j.dump() + "\n";
    }
    return out;
  };
  CHECK(strip(metrics_of(dir / "loose")) == strip(metrics_of(dir / "packed")));

  SECTION("raw packs hold pre-resized pixels") {
    auto raw = kg::test::run_kgtrain({"pack", recipe, "data.format=folder", "--split", "train", "--raw", "--size", "8",
                                      "8", "--out", dir / "raw.kgpack"});
    CHECK(raw.exit_code == 3);  // the tiny layout has no class folders: a clear data error
    fs::rename(ds.root + "/train_moved", ds.root + "/train");
    raw = kg::test::run_kgtrain(
        {"pack", recipe, "--split", "train", "--raw", "--size", "8", "8", "--out", dir / "raw.kgpack"});
    INFO(raw.output);
    REQUIRE(raw.exit_code == 0);
    CHECK(raw.output.find("raw 8x8x1") != std::string::npos);
    auto fit = kg::test::run_kgtrain({"fit", recipe, "data.format=pack", "data.train_pack=" + (dir / "raw.kgpack"),
                                      "data.image_size=8", "--smoke", "--run-dir", dir / "rawrun", "--quiet"});
    INFO(fit.output);
    CHECK(fit.exit_code == 0);
  }
}

TEST_CASE("bad rows in fit: error lists them all, skip trains and writes bad_rows.csv", "[integration][jobs]") {
  kg::test::TempDir dir;
  auto ds = kg::test::make_tiny_dataset(dir, 40, 4);
  auto recipe = dir.write("tiny.toml", kg::test::tiny_recipe(ds.root));
  fs::remove(ds.root + "/train/tr3.png");
  kg::write_file_atomic(ds.root + "/train/tr7.png", "garbage");
  auto csv = kg::read_file(ds.root + "/train.csv");
  kg::write_file_atomic(ds.root + "/train.csv", csv + "tr40,\n");

  auto err = kg::test::run_kgtrain({"fit", recipe, "--check-data"});
  CHECK(err.exit_code == 3);
  CHECK(err.output.find("3 bad row(s)") != std::string::npos);
  CHECK(err.output.find("row 4 (line 5): id tr3") != std::string::npos);
  CHECK(err.output.find("row 8 (line 9): id tr7") != std::string::npos);
  CHECK(err.output.find("row 41 (line 42): id tr40: label \"\" is not one of the 2 classes") != std::string::npos);

  auto check = kg::test::run_kgtrain({"fit", recipe, "data.on_bad_row=skip", "--check-data"});
  CHECK(check.exit_code == 0);
  CHECK(check.output.find("38 rows usable, 3 bad rows skipped") != std::string::npos);

  auto skip = kg::test::run_kgtrain(
      {"fit", recipe, "data.on_bad_row=skip", "--run-dir", dir / "run", "--quiet", "train.epochs=1"});
  INFO(skip.output);
  REQUIRE(skip.exit_code == 0);
  auto bad = kg::data::read_csv(dir / "run/bad_rows.csv");
  CHECK(bad.header == std::vector<std::string>{"row", "id", "reason"});
  REQUIRE(bad.rows.size() == 3);
  CHECK(bad.rows[0][0] == "4");
  CHECK(bad.rows[0][1] == "tr3");
  CHECK(bad.rows[2][1] == "tr40");
  auto folds = kg::data::read_csv(dir / "run/folds.csv");
  CHECK(folds.rows.size() == 38);
}

TEST_CASE("progressive resizing with mixup, cutmix, augmentation and the RAM cache trains", "[integration][jobs]") {
  kg::test::TempDir dir;
  auto ds = kg::test::make_tiny_dataset(dir, 48, 8);
  auto recipe = dir.write("tiny.toml", kg::test::tiny_recipe(ds.root));
  auto r = kg::test::run_kgtrain(
      {"fit", recipe, "--run-dir", dir / "run", "--quiet", "train.epochs=2", "data.image_size=[[0, 8], [0.5, 12, 4]]",
       "data.cache=ram", "mixup.mixup_alpha=0.4", "mixup.cutmix_alpha=1.0",
       "data.augment=[{name=\"random_resized_crop\", scale=[0.5, 1.0]}, {name=\"affine\", degrees=10}, "
       "{name=\"color_jitter\"}, {name=\"normalize\", mean=[0.4], std=[0.3]}, {name=\"random_erasing\", p=0.5}]"});
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  auto m = kg::split(metrics_of(dir / "run"), '\n');
  REQUIRE(m.size() >= 2);
  // Epoch 1 at 8x8 with batch 8 (36 rows / 8 = 4 steps), epoch 2 at 12x12 with batch 4 (9 steps).
  CHECK(json::parse(m[0])["step"] == 4);
  CHECK(json::parse(m[1])["step"] == 13);
}

TEST_CASE("a binary task trains with its own loss and metrics, and checks", "[integration][jobs]") {
  kg::test::TempDir dir;
  auto ds = kg::test::make_tiny_dataset(dir, 40, 2);
  auto recipe = dir.write("tiny.toml", kg::test::tiny_recipe(ds.root));
  auto r =
      kg::test::run_kgtrain({"fit", recipe, "data.task=binary", "--run-dir", dir / "run", "--quiet", "train.epochs=1"});
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  auto line = json::parse(kg::split(metrics_of(dir / "run"), '\n')[0]);
  CHECK(line.contains("auc"));
  CHECK(line.contains("log_loss"));
  auto fold = json::parse(kg::read_file(dir / "run/fold.json"));
  CHECK(fold["task"] == "binary");
  CHECK(fs::exists(dir / "run/oof_fold.csv"));
  CHECK(kg::test::run_kgtrain({"fit", recipe, "data.task=binary", "--check-data"}).exit_code == 0);
}

}  // namespace KG_UNITY_ID
}  // namespace
