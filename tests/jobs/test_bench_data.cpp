// `kgtrain bench-data` through the binary: every section measured on a tiny dataset, the JSON report,
// the options that shape it, and recipe errors keeping their exit code.
#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include "core/fs.h"
#include "support/fixtures.h"

namespace {
namespace KG_UNITY_ID {  // each test file's own names in a unity batch (CMakeLists.txt)

using nlohmann::json;

TEST_CASE("bench-data times decode, augmentation and the loader on the recipe", "[integration][jobs]") {
  kg::test::TempDir dir;
  auto ds = kg::test::make_tiny_dataset(dir, 48, 4);
  auto recipe = dir.write("tiny.toml", kg::test::tiny_recipe(ds.root));
  const std::string out = dir / "b.json";

  auto r = kg::test::run_kgtrain({"bench-data", recipe, "--batches", "2", "--json", out, "--quiet"});
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  CHECK(r.output.find("verdict: loader delivers") != std::string::npos);
  auto j = json::parse(kg::read_file(out));
  CHECK(j["schema_version"] == 1);
  CHECK(j["split"] == "train");
  CHECK(j["rows"] == 36);  // 48 rows, fold 1 of 4 held out
  CHECK(j["batch_size"] == 8);
  CHECK(j["input"] == json({{"channels", 1}, {"height", 12}, {"width", 12}}));
  for (auto sec : {"decode", "decode_augment"})
    for (auto k : {"one_thread", "all_workers"}) {
      INFO(sec << "." << k);
      CHECK(j[sec][k]["images_per_s"].get<double>() > 0);
      CHECK(j[sec][k]["images"].get<int64_t>() == 36);  // the sample: min(rows, max(64, batch x batches))
    }
  CHECK(j["decode"]["one_thread"]["threads"] == 1);
  CHECK(j["decode"]["all_workers"]["threads"] == 2);  // data.num_workers
  const auto& runs = j["loader"]["runs"];
  REQUIRE(runs.size() == 3);  // 0, 1, data.num_workers
  for (size_t i = 0; i < runs.size(); ++i) {
    CHECK(runs[i]["workers"] == std::vector<int>{0, 1, 2}[i]);
    CHECK(runs[i]["batches"] == 2);
    CHECK(runs[i]["images"] == 16);
    CHECK(runs[i]["batches_per_s"].get<double>() > 0);
    CHECK(runs[i]["images_per_s"].get<double>() > 0);
    CHECK(runs[i]["repeat_seconds"].size() == 3);
  }
  CHECK(j["verdict"]["loader_workers"] == 2);
  CHECK(j["verdict"]["loader_images_per_s"].get<double>() > 0);
  CHECK(j["verdict"]["bottleneck"].is_null());

  SECTION("--compute-rate gives the verdict; --batches all times one epoch; --split valid") {
    auto v = kg::test::run_kgtrain({"bench-data", recipe, "--split", "valid", "--batches", "all", "--threads", "0,2",
                                    "--sections", "loader", "--repeats", "1", "--compute-rate", "1e9", "--json", out,
                                    "--quiet"});
    INFO(v.output);
    REQUIRE(v.exit_code == 0);
    CHECK(v.output.find("the loader is the bottleneck") != std::string::npos);
    auto k = json::parse(kg::read_file(out));
    CHECK(k["rows"] == 12);
    CHECK(k["batch_size"] == 16);  // eval_batch_size = 2 x batch_size
    CHECK_FALSE(k.contains("decode"));
    REQUIRE(k["loader"]["runs"].size() == 2);
    CHECK(k["loader"]["runs"][1]["images"] == 12);  // the whole held-out fold, one short batch
    CHECK(k["loader"]["batches"] == "all");
    CHECK(k["verdict"]["bottleneck"] == true);
  }
  SECTION("data.uint8_transfer: the loader's uint8 batches are timed") {
    auto u = kg::test::run_kgtrain({"bench-data", recipe, "data.uint8_transfer=true", "--batches", "1", "--repeats",
                                    "1", "--json", out, "--quiet"});
    INFO(u.output);
    REQUIRE(u.exit_code == 0);
    auto k = json::parse(kg::read_file(out));
    CHECK(k["uint8_transfer"] == true);
    CHECK(k["decode_augment"]["one_thread"]["images_per_s"].get<double>() > 0);
    CHECK(k["loader"]["runs"][2]["images_per_s"].get<double>() > 0);
  }
  SECTION("a bad recipe key exits 2") {
    auto b = kg::test::run_kgtrain({"bench-data", recipe, "data.num_workerz=4", "--batches", "2"});
    CHECK(b.exit_code == 2);
    CHECK(b.output.find("data.num_workerz") != std::string::npos);
  }
  SECTION("bad options exit 2") {
    CHECK(kg::test::run_kgtrain({"bench-data", recipe, "--batches", "0"}).exit_code == 2);
    CHECK(kg::test::run_kgtrain({"bench-data", recipe, "--split", "test"}).exit_code == 2);
    CHECK(kg::test::run_kgtrain({"bench-data", recipe, "--sections", "model"}).exit_code == 2);
  }
}

}  // namespace KG_UNITY_ID
}  // namespace
