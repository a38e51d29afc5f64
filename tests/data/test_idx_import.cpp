#include <sys/stat.h>
#include <zlib.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <set>

#include "core/error.h"
#include "core/fs.h"
#include "data/csv.h"
#include "data/idx_import.h"
#include "data/image_io.h"
#include "data/options.h"
#include "data/pack.h"
#include "data/source.h"
#include "support/fixtures.h"
#include "support/temp_dir.h"
#include "test_paths.h"

namespace {
namespace KG_UNITY_ID {  // each test file's own names in a unity batch (CMakeLists.txt)

namespace stdfs = std::filesystem;
using kg::data::IdxImportOptions;

namespace {
void be32(std::string& s, uint32_t v) {
  for (int k = 24; k >= 0; k -= 8) s += static_cast<char>((v >> k) & 255);
}

std::string idx_images(int n, int h, int w, int salt) {
  std::string s;
  be32(s, 0x803);
  be32(s, n);
  be32(s, h);
  be32(s, w);
  for (int i = 0; i < n * h * w; ++i) s += static_cast<char>((i * 37 + salt) & 255);
  return s;
}

std::string idx_labels(const std::vector<int>& y) {
  std::string s;
  be32(s, 0x801);
  be32(s, static_cast<uint32_t>(y.size()));
  for (int v : y) s += static_cast<char>(v);
  return s;
}

void write_gz(const std::string& path, const std::string& bytes) {
  gzFile f = gzopen(path.c_str(), "wb");
  REQUIRE(f != nullptr);
  REQUIRE(gzwrite(f, bytes.data(), static_cast<unsigned>(bytes.size())) == static_cast<int>(bytes.size()));
  REQUIRE(gzclose(f) == Z_OK);
}

const std::vector<int> kTrainY = {3, 0, 9, 1, 1, 4, 2};
const std::vector<int> kTestY = {7, 0, 5};

// Writes the tiny data set (7 train + 3 test images of 4 rows x 5 columns), raw or gzipped.
IdxImportOptions tiny(const std::string& dir, bool gz) {
  IdxImportOptions o;
  auto put = [&](const std::string& name, const std::string& bytes) {
    std::string p = dir + "/" + name + (gz ? ".gz" : "");
    if (gz)
      write_gz(p, bytes);
    else
      kg::write_file_atomic(p, bytes);
    return p;
  };
  o.train_images = put("train-images", idx_images(7, 4, 5, 1));
  o.train_labels = put("train-labels", idx_labels(kTrainY));
  o.test_images = put("test-images", idx_images(3, 4, 5, 100));
  o.test_labels = put("test-labels", idx_labels(kTestY));
  o.out_dir = dir + "/DATA";
  return o;
}

std::set<std::string> entries(const std::string& dir) {
  std::set<std::string> s;
  for (const auto& e : stdfs::directory_iterator(dir)) s.insert(e.path().filename().string());
  return s;
}

std::string error_of(const IdxImportOptions& o) {
  try {
    kg::data::import_idx(o);
  } catch (const kg::DataError& e) {
    return e.what();
  }
  return "(no error)";
}
}  // namespace

TEST_CASE("import_idx: layout, CSVs and byte-exact pixels", "[unit]") {
  kg::test::TempDir d;
  for (bool gz : {false, true}) {
    INFO("gz " << gz);
    IdxImportOptions o = tiny(d.str(), gz);
    o.threads = 3;
    auto r = kg::data::import_idx(o);
    CHECK(r.train == 7);
    CHECK(r.test == 3);
    CHECK(r.height == 4);
    CHECK(r.width == 5);
    const std::string D = o.out_dir;
    CHECK(entries(D) == std::set<std::string>{".kgtrain-import.json", "train", "test", "train.csv", "test.csv",
                                              "sample_submission.csv", "test_labels.csv"});
    CHECK(kg::read_file(D + "/train.csv") == "id,label\n1,3\n2,0\n3,9\n4,1\n5,1\n6,4\n7,2\n");
    CHECK(kg::read_file(D + "/test.csv") == "id\n8\n9\n10\n");
    CHECK(kg::read_file(D + "/sample_submission.csv") == "id,label\n8,0\n9,0\n10,0\n");
    CHECK(kg::read_file(D + "/test_labels.csv") == "id,label\n8,7\n9,0\n10,5\n");
    CHECK(kg::data::read_csv(D + "/train.csv").rows.size() == 7);
    CHECK(entries(D + "/train").size() == 7);
    CHECK(entries(D + "/test") == std::set<std::string>{"8.png", "9.png", "10.png"});

    const std::string train_px = idx_images(7, 4, 5, 1).substr(16);
    const std::string test_px = idx_images(3, 4, 5, 100).substr(16);
    for (int i = 0; i < 10; ++i) {
      const std::string split = i < 7 ? "train" : "test";
      cv::Mat g = kg::data::decode_image(D + "/" + split + "/" + std::to_string(i + 1) + ".png", 1);
      REQUIRE(g.type() == CV_8UC1);
      REQUIRE(g.rows == 4);
      REQUIRE(g.cols == 5);
      const std::string& src = i < 7 ? train_px : test_px;
      const size_t off = static_cast<size_t>(i < 7 ? i : i - 7) * 20;
      CHECK(std::string(reinterpret_cast<const char*>(g.data), 20) == src.substr(off, 20));
    }
  }
}

TEST_CASE("import_idx: re-running gives identical bytes and drops stale images", "[unit]") {
  kg::test::TempDir d;
  IdxImportOptions o = tiny(d.str(), true);
  o.class_names = {"zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine, ten"};
  kg::data::import_idx(o);
  const std::string D = o.out_dir;
  const std::string png = kg::read_file(D + "/train/5.png");
  const std::string csv = kg::read_file(D + "/train.csv");
  CHECK(kg::read_file(D + "/classes.csv").substr(0, 23) == "index,name\n0,zero\n1,one");
  CHECK(kg::data::read_csv(D + "/classes.csv").rows.back() == std::vector<std::string>{"9", "nine, ten"});
  for (const char* junk : {"999.png", "0.png", "05.png", "5.png.tmp", "notes.txt", "sub/x.png"})
    kg::write_file_atomic(D + "/train/" + junk, "stale");
  kg::write_file_atomic(D + "/test/3.png", "stale");  // a train id in the test directory
  struct stat before {};
  REQUIRE(stat((D + "/train/5.png").c_str(), &before) == 0);
  o.threads = 1;
  kg::data::import_idx(o);
  CHECK(kg::read_file(D + "/train/5.png") == png);
  CHECK(kg::read_file(D + "/train.csv") == csv);
  struct stat after {};
  REQUIRE(stat((D + "/train/5.png").c_str(), &after) == 0);
  CHECK(after.st_ino == before.st_ino);  // unchanged images are left alone
  CHECK(entries(D + "/train").size() == 7);
  CHECK(entries(D + "/test") == std::set<std::string>{"8.png", "9.png", "10.png"});
  CHECK(entries(D).size() == 8);  // no staging directories or temp files left

  // New pixels for the same ids: changed files are replaced, and match a fresh import.
  kg::write_file_atomic(d / "other", idx_images(7, 4, 5, 2));
  o.train_images = d / "other";
  kg::data::import_idx(o);
  IdxImportOptions fresh = o;
  fresh.out_dir = d / "FRESH";
  kg::data::import_idx(fresh);
  for (int id = 1; id <= 10; ++id) {
    const std::string rel = (id <= 7 ? "/train/" : "/test/") + std::to_string(id) + ".png";
    CHECK(kg::read_file(D + rel) == kg::read_file(fresh.out_dir + rel));
  }
  CHECK(kg::read_file(D + "/train/5.png") != png);

  o.class_names.resize(5);  // label 9 has no name now
  CHECK_THAT(error_of(o), Catch::Contains("label 9") && Catch::Contains("train-labels"));
}

TEST_CASE("import_idx: malformed inputs are DataErrors naming the file", "[unit]") {
  kg::test::TempDir d;
  IdxImportOptions o = tiny(d.str(), false);

  SECTION("labels given as images") {
    o.train_images = o.train_labels;
    CHECK(error_of(o) == o.train_labels +
                             ": not an IDX image file (magic number 0x00000801, expected "
                             "0x00000803); it holds labels");
  }
  SECTION("truncated raw image file") {
    kg::write_file_atomic(o.train_images, idx_images(7, 4, 5, 1).substr(0, 150));
    CHECK(error_of(o) == o.train_images +
                             " is truncated: expected 7 images of 4x5 (156 bytes), file has "
                             "150 bytes");
  }
  SECTION("truncated header") {
    kg::write_file_atomic(o.test_labels, idx_labels(kTestY).substr(0, 6));
    CHECK_THAT(error_of(o), Catch::Contains("test-labels is truncated"));
  }
  SECTION("extra bytes") {
    kg::write_file_atomic(o.test_labels, idx_labels(kTestY) + "xx");
    CHECK_THAT(error_of(o), Catch::Contains("has 2 bytes after its 3 labels"));
  }
  SECTION("truncated gzip stream") {
    std::string gz = d / "cut.gz";
    write_gz(gz, idx_images(7, 4, 5, 1));
    std::string bytes = kg::read_file(gz);
    kg::write_file_atomic(gz, bytes.substr(0, bytes.size() / 2));
    o.train_images = gz;
    CHECK_THAT(error_of(o), Catch::Contains(gz) && Catch::Contains("truncated"));
  }
  SECTION("count mismatch") {
    kg::write_file_atomic(o.train_labels, idx_labels({1, 2, 3}));
    CHECK_THAT(error_of(o), Catch::Contains("differ in count"));
  }
  SECTION("train and test sizes differ") {
    kg::write_file_atomic(o.test_images, idx_images(3, 5, 4, 0));
    CHECK_THAT(error_of(o), Catch::Contains("are 4x5 but test images"));
  }
  SECTION("missing file") {
    o.test_images = d / "nope.gz";
    CHECK_THAT(error_of(o), Catch::Contains("nope.gz") && Catch::Contains("No such file"));
  }
  SECTION("missing option") {
    o.test_labels.clear();
    CHECK_THROWS_AS(kg::data::import_idx(o), kg::UsageError);
  }
  CHECK_FALSE(stdfs::exists(o.out_dir + "/train.csv"));
}

TEST_CASE("import_idx with packs: raw packs holding the tables, no PNG folders or train/test CSVs", "[unit]") {
  kg::test::TempDir d;
  IdxImportOptions o = tiny(d.str(), true);
  o.packs = true;
  auto r = kg::data::import_idx(o);
  CHECK(r.train == 7);
  const std::string D = o.out_dir;
  CHECK(entries(D) == std::set<std::string>{".kgtrain-import.json", "train.kgpack", "test.kgpack",
                                            "sample_submission.csv", "test_labels.csv"});
  CHECK(kg::read_file(D + "/test_labels.csv") == "id,label\n8,7\n9,0\n10,5\n");

  const std::string train_px = idx_images(7, 4, 5, 1).substr(16), test_px = idx_images(3, 4, 5, 100).substr(16);
  for (bool train : {true, false}) {
    INFO((train ? "train" : "test"));
    auto p = kg::data::PackReader::open(D + (train ? "/train.kgpack" : "/test.kgpack"));
    CHECK(p->kind() == kg::data::PackKind::raw);
    CHECK(p->raw_geometry().height == 4);
    CHECK(p->raw_geometry().width == 5);
    CHECK(p->raw_geometry().channels == 1);
    CHECK(p->id_col() == "id");
    CHECK(p->table_csv() == (train ? "id,label\n1,3\n2,0\n3,9\n4,1\n5,1\n6,4\n7,2\n" : "id\n8\n9\n10\n"));
    REQUIRE(p->size() == (train ? 7 : 3));
    for (int64_t i = 0; i < p->size(); ++i)
      CHECK(std::string(p->item(i)) == (train ? train_px : test_px).substr(static_cast<size_t>(i) * 20, 20));
  }
  // data.format = "auto" finds the packs (there is no train.csv to prefer).
  kg::data::DataOptions dopt;
  dopt.root = D;
  CHECK(kg::data::resolve_format(dopt) == "pack");

  // A second import in the same place gives the same bytes.
  const std::string before = kg::read_file(D + "/train.kgpack");
  kg::data::import_idx(o);
  CHECK(kg::read_file(D + "/train.kgpack") == before);
}

TEST_CASE("import_idx writes only into a new, empty or earlier import's directory", "[unit]") {
  kg::test::TempDir d;
  IdxImportOptions o = tiny(d.str(), true);
  const std::string D = o.out_dir;
  SECTION("a competition download with the same names is left alone") {
    kg::write_file_atomic(D + "/train.csv", "id,label\nmine,1\n");
    kg::write_file_atomic(D + "/train/mine.png", "mine");
    try {
      kg::data::import_idx(o);
      FAIL("expected a UsageError");
    } catch (const kg::UsageError& e) {
      CHECK_THAT(e.what(), Catch::Contains(D + ": the directory is not empty and was not written by import-idx") &&
                               Catch::Contains("it holds train.csv, train/") && Catch::Contains("nothing was changed"));
    }
    CHECK(entries(D) == std::set<std::string>{"train", "train.csv"});
    CHECK(kg::read_file(D + "/train.csv") == "id,label\nmine,1\n");
    CHECK(entries(D + "/train") == std::set<std::string>{"mine.png"});
  }
  SECTION("an empty directory is used; a file is refused") {
    stdfs::create_directories(D);
    kg::data::import_idx(o);
    CHECK(entries(D + "/train").size() == 7);
    o.out_dir = d / "file";
    kg::write_file_atomic(o.out_dir, "x");
    CHECK_THROWS_AS(kg::data::import_idx(o), kg::UsageError);
  }
  SECTION("a re-import in the other layout replaces the earlier layout") {
    kg::data::import_idx(o);
    o.packs = true;
    kg::data::import_idx(o);
    CHECK(entries(D) == std::set<std::string>{".kgtrain-import.json", "train.kgpack", "test.kgpack",
                                              "sample_submission.csv", "test_labels.csv"});
    kg::data::DataOptions dopt;
    dopt.root = D;
    CHECK(kg::data::resolve_format(dopt) == "pack");  // the PNG import's train.csv is gone
    o.packs = false;
    kg::data::import_idx(o);
    CHECK(entries(D) == std::set<std::string>{".kgtrain-import.json", "train", "test", "train.csv", "test.csv",
                                              "sample_submission.csv", "test_labels.csv"});
    CHECK(nlohmann::json::parse(kg::read_file(D + "/.kgtrain-import.json"))["layout"] == "png");
  }
}

TEST_CASE("prepare_fashion_mnist.sh takes a plain output folder and refuses NAME=value", "[integration]") {
  kg::test::TempDir tmp;
  const std::string script = "bash '" KGTRAIN_SOURCE_DIR "/scripts/prepare_fashion_mnist.sh' ";
  auto r = kg::test::run_shell("cd '" + tmp.path().string() + "' && " + script + "DATA=x 2>&1");
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.output, Catch::Contains("looks like NAME=value") && Catch::Contains("prepare_fashion_mnist.sh x"));
  CHECK_FALSE(stdfs::exists(stdfs::path(KGTRAIN_SOURCE_DIR) / "DATA=x"));
  r = kg::test::run_shell(script + "a b 2>&1");
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.output, Catch::Contains("usage: bash scripts/prepare_fashion_mnist.sh [OUT_DIR]"));
  // A plain path is taken as the folder: with IDX files that are not there, it says where it looked (exit 3).
  r = kg::test::run_shell("FASHION_MNIST_DIR='" + tmp.path().string() + "/none' KGTRAIN='" KGTRAIN_BINARY "' " +
                          script + "'" + tmp.path().string() + "/out' 2>&1");
  CHECK(r.exit_code == 3);
  CHECK_THAT(r.output, Catch::Contains(tmp.path().string() + "/none has no Fashion-MNIST"));
}

}  // namespace KG_UNITY_ID
}  // namespace
