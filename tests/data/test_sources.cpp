// Sources (csv, folder), tasks, CSV dialects through the table builder, bad-row policies, strata.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <set>

#include <opencv2/core.hpp>

#include "core/error.h"
#include "core/fs.h"
#include "data/folds.h"
#include "data/image_io.h"
#include "data/loader.h"
#include "data/source.h"
#include "data/table.h"
#include "support/temp_dir.h"

namespace {
namespace KG_UNITY_ID {  // each test file's own names in a unity batch (CMakeLists.txt)

namespace fs = std::filesystem;
using kg::data::DataOptions;
using kg::data::Split;
using kg::data::Task;

namespace {

void png(const std::string& path, int value, int h = 6, int w = 6, int type = CV_8UC1) {
  kg::data::write_png_atomic(path, cv::Mat(h, w, type, cv::Scalar::all(value)));
}

DataOptions opts(const std::string& root) {
  DataOptions o;
  o.root = root;
  o.channels = 1;
  o.image_size = 6;
  return o;
}

kg::data::Table load(const DataOptions& o, Split s = Split::train, bool scan = true) {
  auto classes = kg::data::infer_classes(o);
  return kg::data::load_split(o, s, classes, scan, 2);
}

}  // namespace

TEST_CASE("csv source: an unseen layout with BOM, CRLF, quoted commas, string labels and path sub-folders",
          "[unit][data]") {
  kg::test::TempDir dir;
  const std::string root = dir / "d";
  png(root + "/imgs/a/x1.png", 10);
  png(root + "/imgs/b/x2.png", 20);
  png(root + "/imgs/a/x3.png", 30);
  kg::write_file_atomic(root + "/labels.csv",
                        "\xEF\xBB\xBF"
                        "file,species,note\r\n"
                        "a/x1.png,\"cat, tabby\",\"said \"\"hi\"\"\"\r\n"
                        "b/x2.png,dog,\r\n"
                        "a/x3.png,\"cat, tabby\",x\r\n\r\n\r\n");
  DataOptions o = opts(root);
  o.train_csv = "labels.csv";
  o.image_dir = "imgs";
  o.id_col = "file";
  o.path_col = "file";
  o.label_cols = {"species"};
  CHECK(kg::data::resolve_format(o) == "csv");
  auto classes = kg::data::infer_classes(o);
  CHECK(classes.names == std::vector<std::string>{"cat, tabby", "dog"});
  CHECK_FALSE(classes.numeric);
  auto t = kg::data::load_split(o, Split::train, classes, true, 2);
  REQUIRE(t.size() == 3);
  CHECK(t.targets == std::vector<int64_t>{0, 1, 0});
  CHECK(t.rows[1].id == "b/x2.png");
  CHECK(t.rows[1].csv_row == 2);
  CHECK(t.image(1, 1).at<uint8_t>(0, 0) == 20);
  CHECK(t.image(2, 3).channels() == 3);  // data.channels converts gray to RGB
}

TEST_CASE("csv source: id + image_ext, integer labels, numeric feature columns", "[unit][data]") {
  kg::test::TempDir dir;
  const std::string root = dir / "d";
  for (int i = 0; i < 4; ++i) png(root + "/train/im" + std::to_string(i) + ".jpg.png", 10 * i);
  kg::write_file_atomic(
      root + "/train.csv",
      "image_id,target,price,area\nim0.jpg,2,1.5,10\nim1.jpg,0,2,20\nim2.jpg,1,-3e2,30\nim3.jpg,2,0,40\n");
  DataOptions o = opts(root);
  o.id_col = "image_id";
  o.image_ext = "png";  // without the dot
  o.label_cols = {"target"};
  o.feature_cols = {"price", "area"};
  auto t = load(o);
  auto classes = kg::data::infer_classes(o);
  CHECK(classes.numeric);
  CHECK(classes.size() == 3);
  CHECK(t.targets == std::vector<int64_t>{2, 0, 1, 2});
  REQUIRE(t.feature_dim == 2);
  CHECK(t.features == std::vector<float>{1.5f, 10, 2, 20, -300, 30, 0, 40});
  CHECK(t.rows[0].image == (fs::path(root) / "train" / "im0.jpg.png").string());
}

TEST_CASE("tasks: multilabel (indicator columns and a names column), binary, regression", "[unit][data]") {
  kg::test::TempDir dir;
  const std::string root = dir / "d";
  for (int i = 0; i < 3; ++i) png(root + "/train/r" + std::to_string(i) + ".png", 50);
  DataOptions o = opts(root);

  SECTION("multilabel indicator columns") {
    kg::write_file_atomic(root + "/train.csv", "id,cloud,rain,sun\nr0,1,0,1\nr1,0,0,0\nr2,1.0,1,0\n");
    o.task = kg::Task::multilabel;
    o.label_cols = {"cloud", "rain", "sun"};
    auto c = kg::data::infer_classes(o);
    CHECK(c.names == o.label_cols);
    CHECK(c.outputs() == 3);
    auto t = kg::data::load_split(o, Split::train, c, false, 1);
    CHECK(t.value_dim == 3);
    CHECK(t.values == std::vector<float>{1, 0, 1, 0, 0, 0, 1, 1, 0});
    CHECK(t.targets.empty());
    // Stratify by each row's rarest label: rain (1 row) < sun (1 row, later) < cloud (2 rows); none = K.
    CHECK(t.strata() == std::vector<int64_t>{2, 3, 1});
  }
  SECTION("multilabel names in one column") {
    kg::write_file_atomic(root + "/train.csv", "id,tags\nr0,sun cloud\nr1,\nr2,rain  cloud\n");
    o.task = kg::Task::multilabel;
    o.label_cols = {"tags"};
    auto c = kg::data::infer_classes(o);
    CHECK(c.names == std::vector<std::string>{"cloud", "rain", "sun"});
    auto t = kg::data::load_split(o, Split::train, c, false, 1);
    CHECK(t.values == std::vector<float>{1, 0, 1, 0, 0, 0, 1, 1, 0});
  }
  SECTION("binary") {
    kg::write_file_atomic(root + "/train.csv", "id,label\nr0,benign\nr1,malignant\nr2,benign\n");
    o.task = kg::Task::binary;
    auto c = kg::data::infer_classes(o);
    CHECK(c.outputs() == 1);
    CHECK(c.names == std::vector<std::string>{"benign", "malignant"});
    auto t = kg::data::load_split(o, Split::train, c, false, 1);
    CHECK(t.values == std::vector<float>{0, 1, 0});
    CHECK(t.strata() == std::vector<int64_t>{0, 1, 0});
  }
  SECTION("binary with three classes is an error naming them") {
    kg::write_file_atomic(root + "/train.csv", "id,label\nr0,a\nr1,b\nr2,c\n");
    o.task = kg::Task::binary;
    REQUIRE_THROWS_WITH(kg::data::infer_classes(o), Catch::Contains("holds 3 classes: a, b, c"));
  }
  SECTION("regression with two targets") {
    kg::write_file_atomic(root + "/train.csv", "id,price,age\nr0,10.5,1\nr1,-2,2\nr2,3e1,3\n");
    o.task = kg::Task::regression;
    o.label_cols = {"price", "age"};
    auto c = kg::data::infer_classes(o);
    CHECK(c.outputs() == 2);
    auto t = kg::data::load_split(o, Split::train, c, false, 1);
    CHECK(t.values == std::vector<float>{10.5f, 1, -2, 2, 30, 3});
    CHECK(t.strata(3) == std::vector<int64_t>{1, 0, 2});  // quantile bins of price
  }
  SECTION("a test table without the label columns is unlabeled") {
    kg::write_file_atomic(root + "/train.csv", "id,price\nr0,1\nr1,2\nr2,3\n");
    kg::write_file_atomic(root + "/test.csv", "id\nr0\nr1\n");
    for (int i = 0; i < 2; ++i) png(root + "/test/r" + std::to_string(i) + ".png", 50);
    o.task = kg::Task::regression;
    o.label_cols = {"price"};
    auto c = kg::data::infer_classes(o);
    auto t = kg::data::load_split(o, Split::test, c, true, 1);
    CHECK(t.size() == 2);
    CHECK_FALSE(t.labeled());
  }
}

TEST_CASE("folder source: one sub-folder per class, test folder listing", "[unit][data]") {
  kg::test::TempDir dir;
  const std::string root = dir / "d";
  png(root + "/train/zebra/1.png", 1);
  png(root + "/train/ant/b/2.png", 2);  // nested folders inside a class are fine
  png(root + "/train/ant/1.JPG.png", 3);
  kg::write_file_atomic(root + "/train/ant/notes.txt", "not an image");
  png(root + "/test/q/7.png", 9);
  png(root + "/test/3.png", 9);
  DataOptions o = opts(root);
  o.train_csv = "missing.csv";
  o.test_csv = "missing_test.csv";
  CHECK(kg::data::resolve_format(o) == "folder");
  auto c = kg::data::infer_classes(o);
  CHECK(c.names == std::vector<std::string>{"ant", "zebra"});
  auto t = kg::data::load_split(o, Split::train, c, true, 2);
  REQUIRE(t.size() == 3);
  CHECK(t.rows[0].id == "ant/1.JPG.png");
  CHECK(t.rows[1].id == "ant/b/2.png");
  CHECK(t.targets == std::vector<int64_t>{0, 0, 1});
  auto test = kg::data::load_split(o, Split::test, c, true, 2);
  REQUIRE(test.size() == 2);
  CHECK(test.rows[0].id == "3");
  CHECK(test.rows[1].id == "q/7");
  CHECK_FALSE(test.labeled());
}

TEST_CASE("data.format auto with nothing there names what it looked for", "[unit][data]") {
  kg::test::TempDir dir;
  DataOptions o = opts(dir / "empty");
  REQUIRE_THROWS_WITH(kg::data::resolve_format(o), Catch::Contains("found no dataset"));
}

TEST_CASE("bad rows: every kind is listed under error and skipped once under skip", "[unit][data]") {
  kg::test::TempDir dir;
  const std::string root = dir / "d";
  for (int i = 0; i < 6; ++i) png(root + "/train/ok" + std::to_string(i) + ".png", 20 * i);
  kg::write_file_atomic(root + "/train/empty.png", "");
  kg::write_file_atomic(root + "/train/junk.png", "this is not a png");
  kg::write_file_atomic(root + "/secret.png", "outside");  // inside root but outside image_dir: allowed
  png(dir / "outside.png", 1);
  fs::create_symlink(dir / "outside.png", root + "/train/escape.png");
  kg::write_file_atomic(root + "/train.csv",
                        "path,label\n"
                        "ok0.png,a\n"
                        "missing.png,a\n"  // row 2: missing file
                        "empty.png,b\n"    // row 3: empty file
                        "junk.png,b\n"     // row 4: undecodable
                        "ok1.png,a\n"
                        "../../outside.png,b\n"  // row 6: leaves the root
                        "/etc/passwd,a\n"        // row 7: absolute
                        "escape.png,b\n"         // row 8: symlink escape
                        "ok2.png,b\n"
                        "ok3.png,a\n"
                        "ok4.png,b\n"
                        "ok5.png,a\n");
  DataOptions o = opts(root);
  o.id_col = "path";
  o.path_col = "path";
  auto classes = kg::data::infer_classes(o);

  SECTION("error lists every bad row with its number, id and reason") {
    try {
      kg::data::load_split(o, Split::train, classes, true, 2);
      FAIL("expected a DataError");
    } catch (const kg::DataError& e) {
      std::string m = e.what();
      CHECK(e.exit_code() == 3);
      CHECK_THAT(m, Catch::Contains("6 bad row(s)"));
      CHECK_THAT(m, Catch::Contains("row 2 (line 3): id missing.png"));
      CHECK_THAT(m, Catch::Contains("row 3 (line 4): id empty.png"));
      CHECK_THAT(m, Catch::Contains("row 4 (line 5): id junk.png"));
      CHECK_THAT(m, Catch::Contains("leaves data.root"));
      CHECK_THAT(m, Catch::Contains("is absolute"));
      CHECK_THAT(m, Catch::Contains("outside data.root"));
      CHECK_THAT(m, Catch::Contains("on_bad_row = \"skip\""));
    }
  }
  SECTION("skip trains without them and lists each once") {
    o.on_bad_row = "skip";
    auto t = kg::data::load_split(o, Split::train, classes, true, 2);
    CHECK(t.size() == 6);
    REQUIRE(t.dropped.size() == 6);
    std::vector<int64_t> rows;
    for (auto& b : t.dropped) rows.push_back(b.csv_row);
    CHECK(rows == std::vector<int64_t>{2, 3, 4, 6, 7, 8});
    CHECK(t.targets.size() == 6);
    for (auto& r : t.rows) CHECK(r.id.rfind("ok", 0) == 0);
    auto csv = kg::data::bad_rows_csv(t.dropped);
    CHECK(csv.rfind("row,id,reason\n2,missing.png,", 0) == 0);
    CHECK(csv.find("\n6,../../outside.png,") != std::string::npos);
  }
  SECTION("the scan fills the RAM cache under the rows left after skipping") {
    o.on_bad_row = "skip";
    kg::data::ImageCache cache(1 << 20);
    auto t = kg::data::load_split(o, Split::train, classes, true, 2, {}, &cache);
    REQUIRE(t.size() == 6);
    CHECK(cache.count() == 6);
    for (int64_t i = 0; i < t.size(); ++i) {
      cv::Mat img = cache.get(i);
      REQUIRE_FALSE(img.empty());
      const int want = 20 * std::stoi(t.rows[static_cast<size_t>(i)].id.substr(2, 1));  // okK.png holds 20*K
      CHECK(img.at<uint8_t>(0, 0) == want);
    }
  }
  SECTION("a full cache keeps what fits and leaves the rest to be decoded later") {
    kg::data::ImageCache small(3 * 36);  // three 6x6 grey images
    o.on_bad_row = "skip";
    auto t = kg::data::load_split(o, Split::train, classes, true, 1, {}, &small);
    CHECK(small.count() == 3);
    CHECK(small.bytes() == 3 * 36);
  }
}

TEST_CASE("bad rows: labels, targets, features and ids", "[unit][data]") {
  kg::test::TempDir dir;
  const std::string root = dir / "d";
  for (int i = 0; i < 5; ++i) png(root + "/train/r" + std::to_string(i) + ".png", 5);
  DataOptions o = opts(root);

  SECTION("out-of-range integer label under error and skip") {
    kg::write_file_atomic(root + "/train.csv", "id,label\nr0,0\nr1,1\nr2,7\nr3,-1\nr4,1\n");
    o.num_classes = 2;
    auto c = kg::data::infer_classes(o);
    REQUIRE_THROWS_WITH(kg::data::load_split(o, Split::train, c, false, 1),
                        Catch::Contains("row 3 (line 4): id r2: label \"7\" is not one of the 2 classes (0..1)"));
    o.on_bad_row = "skip";
    auto t = kg::data::load_split(o, Split::train, c, false, 1);
    CHECK(t.size() == 3);
    CHECK(t.dropped.size() == 2);
  }
  SECTION("non-numeric regression target and feature, empty and duplicate ids") {
    kg::write_file_atomic(root + "/train.csv",
                          "id,y,f\nr0,1,2\nr1,abc,2\nr2,3,x\n,4,1\nr0,5,5\nr4,nan,1\nr5,1e40,1\nr6,2,-1e39\n");
    o.task = kg::Task::regression;
    o.label_cols = {"y"};
    o.feature_cols = {"f"};
    auto c = kg::data::infer_classes(o);
    try {
      kg::data::load_split(o, Split::train, c, false, 1);
      FAIL("expected a DataError");
    } catch (const kg::DataError& e) {
      std::string m = e.what();
      CHECK_THAT(m, Catch::Contains("7 bad row(s)"));
      CHECK_THAT(m, Catch::Contains("target y = \"abc\" is not a finite number"));
      CHECK_THAT(m, Catch::Contains("feature f = \"x\" is not a finite number"));
      CHECK_THAT(m, Catch::Contains("empty id"));
      CHECK_THAT(m, Catch::Contains("duplicate id \"r0\""));
      CHECK_THAT(m, Catch::Contains("target y = \"nan\""));
      // Finite doubles past float's range would train on inf.
      CHECK_THAT(m, Catch::Contains("target y = \"1e40\" is not a finite number"));
      CHECK_THAT(m, Catch::Contains("feature f = \"-1e39\" is not a finite number"));
    }
    o.on_bad_row = "skip";
    auto t = kg::data::load_split(o, Split::train, c, false, 1);
    CHECK(t.size() == 1);
    CHECK(t.values == std::vector<float>{1});
    CHECK(t.features == std::vector<float>{2});
  }
}

TEST_CASE("folds: group never splits a group, column uses the CSV's folds", "[unit][data]") {
  kg::test::TempDir dir;
  const std::string root = dir / "d";
  std::string csv = "id,label,patient,fold\n";
  for (int i = 0; i < 40; ++i) {
    png(root + "/train/r" + std::to_string(i) + ".png", 5);
    csv += "r" + std::to_string(i) + "," + (i % 3 ? "a" : "b") + ",p" + std::to_string(i % 9) + "," +
           std::to_string(i % 4) + "\n";
  }
  kg::write_file_atomic(root + "/train.csv", csv);
  DataOptions o = opts(root);
  auto c = kg::data::infer_classes(o);
  kg::data::CvOptions cv;
  cv.folds = 4;

  SECTION("group") {
    cv.group_col = "patient";  // strategy auto -> group
    auto t = kg::data::load_split(o, Split::train, c, false, 1, kg::data::fold_columns(cv));
    auto f = kg::data::assign_folds(t, cv, 3);
    std::map<std::string, std::set<int>> folds_of;
    std::vector<int> sizes(4, 0);
    for (size_t i = 0; i < f.size(); ++i) {
      folds_of[t.columns.at("patient")[i]].insert(f[i]);
      sizes[static_cast<size_t>(f[i])]++;
    }
    for (auto& [g, s] : folds_of) CHECK(s.size() == 1);
    for (int n : sizes) CHECK(n > 0);
    CHECK(f == kg::data::assign_folds(t, cv, 3));
    cv.folds = 10;
    CHECK_THROWS_WITH(kg::data::assign_folds(t, cv, 3), Catch::Contains("only 9 distinct groups"));
  }
  SECTION("column") {
    cv.strategy = "column";
    auto t = kg::data::load_split(o, Split::train, c, false, 1, kg::data::fold_columns(cv));
    auto f = kg::data::assign_folds(t, cv, 3);
    for (size_t i = 0; i < f.size(); ++i) CHECK(f[i] == static_cast<int>(i % 4));
    cv.folds = 3;  // the column holds fold 3
    CHECK_THROWS_WITH(kg::data::assign_folds(t, cv, 3), Catch::Contains("fold = \"3\" is not a fold in 0..2"));
  }
  SECTION("stratified keeps class balance, random ignores labels") {
    auto t = kg::data::load_split(o, Split::train, c, false, 1);
    auto f = kg::data::assign_folds(t, cv, 3);
    std::vector<int> b(4, 0);
    for (size_t i = 0; i < f.size(); ++i) b[static_cast<size_t>(f[i])] += t.targets[i] == 1;
    CHECK(*std::max_element(b.begin(), b.end()) - *std::min_element(b.begin(), b.end()) <= 1);
    cv.strategy = "random";
    auto r = kg::data::assign_folds(t, cv, 3);
    CHECK(r.size() == 40);
  }
  SECTION("group strategy without group_col is a recipe error") {
    cv.strategy = "group";
    CHECK_THROWS_AS(kg::data::fold_columns(cv), kg::ConfigError);
  }
}

TEST_CASE("progressive resizing schedule", "[unit][data]") {
  DataOptions o;
  o.channels = 3;
  o.image_size = kg::config::json::parse("[[0, 96], [0.5, [128, 112], 32], [0.8, 160]]");
  auto s = kg::data::size_schedule(o);
  REQUIRE(s.size() == 3);
  CHECK(s[1].size.height == 128);
  CHECK(s[1].size.width == 112);
  CHECK(s[1].batch_size == 32);
  CHECK(kg::data::geometry(o).height == 160);
  CHECK(kg::data::stage_at(s, 0, 10) == 0);
  CHECK(kg::data::stage_at(s, 4, 10) == 0);
  CHECK(kg::data::stage_at(s, 5, 10) == 1);
  CHECK(kg::data::stage_at(s, 8, 10) == 2);
  CHECK(kg::data::stage_at(s, 9, 10) == 2);
}

TEST_CASE("bad rows: the error's hint fits the policy", "[unit][data]") {
  auto message = [](const std::string& policy) {
    kg::data::Table t;
    t.csv_path = "test.csv";
    try {
      kg::data::apply_bad_row_policy(t, {{2, "t1", "cannot decode image", "test.csv row 2 (line 3)"}}, policy);
    } catch (const kg::DataError& e) {
      return std::string(e.what());
    }
    return std::string("(no error)");
  };
  const std::string listed = "test.csv: 1 bad row(s)\n  - test.csv row 2 (line 3): id t1: cannot decode image\n";
  CHECK(message("error") == listed +
                                "(fix the rows, or set data.on_bad_row = \"skip\" to train without them and list "
                                "them in bad_rows.csv)");
  // tta-predict: skipping a test row would leave the submission without it, whatever the recipe says.
  CHECK(message("required") == listed + "(fix the rows: every row of this table needs a prediction)");
}

TEST_CASE("csv source: data.max_image_pixels travels with the table to every decode", "[unit][data]") {
  // Two tables in one process with two limits (a sweep, fit beside tta-predict): each keeps its own.
  kg::test::TempDir dir;
  const std::string root = dir / "d";
  png(root + "/imgs/x1.png", 10);
  png(root + "/imgs/x2.png", 20);
  kg::write_file_atomic(root + "/train.csv", "id,label\nx1.png,0\nx2.png,1\n");
  DataOptions o = opts(root);
  o.train_csv = "train.csv";
  o.image_dir = "imgs";
  o.id_col = o.path_col = "id";
  o.label_cols = {"label"};
  DataOptions tight = o;
  tight.max_image_pixels = 35;  // the image has 36
  const auto strict = load(tight, Split::train, false), loose = load(o, Split::train, false);
  CHECK(strict.max_image_pixels == 35);
  CHECK_THROWS_WITH(strict.image(0, 1), Catch::Contains("more than data.max_image_pixels = 35"));
  CHECK(loose.image(0, 1).rows == 6);
  CHECK_THROWS_AS(load(tight), kg::DataError);  // the scan decodes every image under the recipe's limit
}

}  // namespace KG_UNITY_ID
}  // namespace
