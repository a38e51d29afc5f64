// show-batch and the sample grid: normalized batches back to the pixels they came from, captions for
// every task's (soft) targets, and the command end to end with its bad-input exits.
#include <catch2/catch.hpp>

#include <torch/torch.h>

#include <filesystem>

#include "core/fs.h"
#include "data/table.h"
#include "jobs/sample_grid.h"
#include "report/tb_events.h"
#include "support/fixtures.h"
#include "support/job_helpers.h"

namespace {
namespace KG_UNITY_ID {  // each test file's own names in a unity batch (CMakeLists.txt)

namespace fs = std::filesystem;

TEST_CASE("batch_tiles undoes the normalization to the original 8-bit pixels", "[unit][jobs]") {
  const at::Tensor u8 = torch::randint(0, 256, {3, 2, 5, 4}, torch::kUInt8);
  const std::vector<double> mean{0.5, 0.25}, std{0.2, 0.4};
  const at::Tensor m = torch::tensor(mean).to(torch::kFloat).view({1, 2, 1, 1});
  const at::Tensor s = torch::tensor(std).to(torch::kFloat).view({1, 2, 1, 1});
  const at::Tensor x = (u8.to(torch::kFloat) / 255.0 - m) / s;
  kg::data::ClassList classes;
  classes.names = {"cat", "dog"};
  const auto tiles =
      kg::jobs::batch_tiles(x.narrow(1, 0, 1), torch::tensor({0, 1, 1}, torch::kLong), {mean[0]}, {std[0]}, classes);
  REQUIRE(tiles.size() == 3);
  for (int i = 0; i < 3; ++i) {
    CHECK(tiles[i].channels == 1);
    CHECK(tiles[i].height == 5);
    CHECK(tiles[i].width == 4);
    const at::Tensor want = u8[i][0].contiguous();
    CHECK(std::equal(tiles[i].pixels.begin(), tiles[i].pixels.end(), want.data_ptr<uint8_t>()));
  }
  CHECK(tiles[0].caption == std::vector<std::string>{"cat"});
  CHECK(tiles[2].caption == std::vector<std::string>{"dog"});
}

TEST_CASE("captions show soft targets: mixed classes, binary, multilabel, regression", "[unit][jobs]") {
  kg::data::ClassList c;
  c.names = {"a", "b", "c"};
  c.task = kg::data::Task::multiclass;
  CHECK(kg::jobs::target_caption(torch::tensor({0.0, 0.97, 0.03}), c) == std::vector<std::string>{"b"});
  CHECK(kg::jobs::target_caption(torch::tensor({0.3, 0.02, 0.68}), c) == std::vector<std::string>{"0.68 c", "0.3 a"});
  c.task = kg::data::Task::multilabel;
  CHECK(kg::jobs::target_caption(torch::tensor({1.0, 0.0, 0.5}), c) == std::vector<std::string>{"a", "0.5 c"});
  CHECK(kg::jobs::target_caption(torch::tensor({0.0, 0.0, 0.0}), c) == std::vector<std::string>{"(none)"});
  c.names = {"no", "yes"};
  c.task = kg::data::Task::binary;
  CHECK(kg::jobs::target_caption(torch::tensor({1.0}), c) == std::vector<std::string>{"yes"});
  CHECK(kg::jobs::target_caption(torch::tensor({0.25}), c) == std::vector<std::string>{"0.25 yes", "0.75 no"});
  c.names = {"price"};
  c.task = kg::data::Task::regression;
  CHECK(kg::jobs::target_caption(torch::tensor({12.5}), c) == std::vector<std::string>{"y 12.5"});
}

TEST_CASE("show-batch writes a grid of augmented, mixed training images, bad flags exit 2", "[integration][jobs]") {
  kg::test::TempDir dir;
  auto ds = kg::test::make_tiny_dataset(dir, 32, 4);
  auto recipe = dir.write("tiny.toml", kg::test::tiny_recipe(ds.root));
  const std::string out = dir / "batch.png";
  auto r = kg::test::run_kgtrain(
      {"show-batch", recipe, "mixup.mixup_alpha=0.8", "mixup.mode=elem", "--out", out, "--n", "6", "--quiet"});
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  int h = 0, w = 0, c = 0;
  REQUIRE(kg::report::png_size(kg::read_file(out), h, w, c));
  CHECK(c == 3);
  CHECK(w >= 6 * 112);  // six 12-pixel images enlarged to >= 112 in one row
  CHECK(h >= 112);

  // --views: identity, hflip and two train_aug passes of one test image, one tile each, in one row.
  const std::string views = dir / "views.png";
  auto v = kg::test::run_kgtrain({"show-batch", recipe,
                                  "tta.views=[\"identity\", \"hflip\", { name = \"train_aug\", n = 2 }]", "--views",
                                  "--id", "te3", "--out", views, "--quiet"});
  INFO(v.output);
  REQUIRE(v.exit_code == 0);
  REQUIRE(kg::report::png_size(kg::read_file(views), h, w, c));
  CHECK(w >= 4 * 112);
  CHECK(w < 5 * 112);
  auto no_id = kg::test::run_kgtrain({"show-batch", recipe, "--views", "--id", "nope", "--out", views});
  CHECK(no_id.exit_code == 2);
  CHECK(no_id.output.find("--id nope is not a row of") != std::string::npos);
  CHECK(kg::test::run_kgtrain({"show-batch", recipe, "--id", "te3", "--out", views}).exit_code == 2);

  CHECK(kg::test::run_kgtrain({"show-batch", recipe, "--n", "0", "--out", out}).exit_code == 2);
  CHECK(kg::test::run_kgtrain({"show-batch", recipe, "--epoch", "9", "--out", out}).exit_code == 2);
  auto bad_key = kg::test::run_kgtrain({"show-batch", recipe, "mixup.alpha=1", "--out", out});
  CHECK(bad_key.exit_code == 2);
  CHECK(bad_key.output.find("mixup.alpha") != std::string::npos);
  // An output that cannot be written (a folder in the way) is a data error naming it.
  fs::create_directories(dir / "taken.png");
  auto taken = kg::test::run_kgtrain({"show-batch", recipe, "--out", dir / "taken.png"});
  CHECK(taken.exit_code == 3);
  CHECK(taken.output.find("taken.png") != std::string::npos);
}

}  // namespace KG_UNITY_ID
}  // namespace
