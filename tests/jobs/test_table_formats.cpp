// Tables in Parquet through the binary: the tiny dataset's train.csv, test.csv and sample_submission.csv turned into
// .parquet files (tests/support/parquet_writer.h) train and predict exactly as the CSVs do.
#include <catch2/catch.hpp>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "core/fs.h"
#include "core/strings.h"
#include "data/csv.h"
#include "support/fixtures.h"
#include "support/parquet_writer.h"

namespace {
namespace KG_UNITY_ID {  // each test file's own names in a unity batch (CMakeLists.txt)

using nlohmann::json;

void to_parquet(const std::string& csv, const std::string& parquet) {
  const auto t = kg::data::read_csv(csv);
  kg::write_file_atomic(parquet, kg::test::parquet::write_strings(t.header, t.rows));
}

// metrics.jsonl without its timings.
std::string losses(const std::string& run) {
  std::string out;
  for (auto& line : kg::split(kg::read_file(run + "/metrics.jsonl"), '\n')) {
    if (line.empty()) continue;
    auto j = json::parse(line);
    for (const char* k : {"train_images_per_s", "elapsed_s", "epoch_seconds"}) j.erase(k);
    out += j.dump() + "\n";
  }
  return out;
}

TEST_CASE("fit and tta-predict from .parquet tables give what the CSVs give", "[integration][jobs]") {
  kg::test::TempDir dir;
  auto ds = kg::test::make_tiny_dataset(dir, 48, 8);
  auto recipe = dir.write("tiny.toml", kg::test::tiny_recipe(ds.root));
  for (const char* t : {"train", "test", "sample_submission"})
    to_parquet(ds.root + "/" + t + ".csv", ds.root + "/" + t + ".parquet");

  auto csv = kg::test::run_kgtrain({"fit", recipe, "--run-dir", dir / "csv", "--quiet", "train.epochs=2"});
  INFO(csv.output);
  REQUIRE(csv.exit_code == 0);
  auto pq = kg::test::run_kgtrain(
      {"fit", recipe, "data.train_csv=train.parquet", "--run-dir", dir / "pq", "--quiet", "train.epochs=2"});
  INFO(pq.output);
  REQUIRE(pq.exit_code == 0);
  CHECK(losses(dir / "csv") == losses(dir / "pq"));
  CHECK(kg::read_file(dir / "csv/folds.csv") == kg::read_file(dir / "pq/folds.csv"));
  CHECK(kg::read_file(dir / "csv/classes.json") == kg::read_file(dir / "pq/classes.json"));

  auto sub_csv = kg::test::run_kgtrain({"tta-predict", recipe, "--checkpoint", dir / "csv/checkpoints/best", "--out",
                                        dir / "csv.csv", "--run-dir", dir / "pred_csv", "--quiet"});
  REQUIRE(sub_csv.exit_code == 0);
  auto sub_pq = kg::test::run_kgtrain(
      {"tta-predict", recipe, "data.test_csv=test.parquet", "data.sample_submission=sample_submission.parquet",
       "--checkpoint", dir / "pq/checkpoints/best", "--out", dir / "pq.csv", "--run-dir", dir / "pred_pq", "--quiet"});
  INFO(sub_pq.output);
  REQUIRE(sub_pq.exit_code == 0);
  CHECK(kg::read_file(dir / "csv.csv") == kg::read_file(dir / "pq.csv"));
}

TEST_CASE("a bad row of a .parquet table is named by its row, without a line", "[integration][jobs]") {
  kg::test::TempDir dir;
  auto ds = kg::test::make_tiny_dataset(dir, 24, 4);
  auto recipe = dir.write("tiny.toml", kg::test::tiny_recipe(ds.root));
  auto t = kg::data::read_csv(ds.root + "/train.csv");
  t.rows[4][1] = "";  // an empty label
  kg::write_file_atomic(ds.root + "/train.parquet", kg::test::parquet::write_strings(t.header, t.rows));
  auto r = kg::test::run_kgtrain({"fit", recipe, "data.train_csv=train.parquet", "--check-data"});
  INFO(r.output);
  CHECK(r.exit_code == 3);
  CHECK(r.output.find("train.parquet row 5: id " + t.rows[4][0]) != std::string::npos);
}

}  // namespace KG_UNITY_ID
}  // namespace
