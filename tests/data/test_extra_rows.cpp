// data.extra_train_csv: extra (pseudo-labelled) rows appended after the training rows, their soft
// targets, the folds they get (-1: train only) and the batches they make. Expected values are written
// here from the CSVs the tests write, never read back from the code under test.
#include <catch2/catch.hpp>

#include <algorithm>
#include <filesystem>
#include <set>
#include <string>
#include <vector>

#include <torch/torch.h>

#include "core/error.h"
#include "data/folds.h"
#include "data/loader.h"
#include "data/options.h"
#include "data/table.h"
#include "data/transform.h"
#include "support/fixtures.h"

namespace {
namespace KG_UNITY_ID {  // each test file's own names in a unity batch (CMakeLists.txt)

namespace fs = std::filesystem;
using kg::data::Split;
using kg::data::Table;

namespace {

// The tiny dataset: 12 training rows tr0..tr11 (even = "left", odd = "right"), 6 test rows te0..te5
// whose PNGs live in DATA/test (they are the extra rows' images).
struct Extra {
  kg::test::TempDir dir;
  kg::test::TinyDataset ds;
  kg::data::DataOptions o;
  Extra() {
    ds = kg::test::make_tiny_dataset(dir, 12, 6);
    o.root = ds.root;
    o.channels = 1;
    o.image_size = 12;
    o.num_workers = 0;
  }
  // Writes DATA/extra.csv and points data.extra_train_csv at it.
  void csv(const std::string& text) {
    dir.write("data/extra.csv", text);
    o.extra_train_csv = "extra.csv";
  }
  kg::data::ClassList classes() const { return kg::data::infer_classes(o); }
  Table load(bool scan = true) const { return kg::data::load_split(o, Split::train, classes(), scan, 1); }
  Table base() const {
    auto b = o;
    b.extra_train_csv.clear();
    return kg::data::load_split(b, Split::train, classes(), true, 1);
  }
};

const std::string kSoft =
    "id,label,prob_left,prob_right\n"
    "te0,right,0.25,0.75\n"
    "te1,left,0.9,0.1\n"
    "te2,left,0.6,0.4\n"
    "te3,right,0.05,0.95\n";

std::vector<int64_t> all_rows(const Table& t) {
  std::vector<int64_t> r(static_cast<size_t>(t.size()));
  for (size_t i = 0; i < r.size(); ++i) r[i] = static_cast<int64_t>(i);
  return r;
}

}  // namespace

TEST_CASE("extra rows are appended after the training rows with their labels and soft targets",
          "[unit][data][pseudo]") {
  Extra e;
  e.csv(kSoft);
  Table t = e.load();
  REQUIRE(t.size() == 16);
  CHECK(t.extra_begin == 12);
  CHECK(t.base_size() == 12);
  CHECK_FALSE(t.is_extra(11));
  CHECK(t.is_extra(12));
  CHECK(t.is_extra(15));
  // Training rows first, unchanged: tr<i>, left for even i.
  for (int i = 0; i < 12; ++i) {
    CHECK(t.rows[static_cast<size_t>(i)].id == "tr" + std::to_string(i));
    CHECK(t.targets[static_cast<size_t>(i)] == i % 2);
  }
  // Then the extra rows in the CSV's order, classes left = 0, right = 1.
  const std::vector<std::string> ids{"te0", "te1", "te2", "te3"};
  const std::vector<int64_t> labels{1, 0, 0, 1};
  for (size_t j = 0; j < 4; ++j) {
    CHECK(t.rows[12 + j].id == ids[j]);
    CHECK(t.targets[12 + j] == labels[j]);
    // data.extra_image_dir "" = data.test_image_dir: DATA/test/<id>.png
    CHECK(fs::equivalent(t.rows[12 + j].image, e.ds.root + "/test/" + ids[j] + ".png"));
  }
  REQUIRE(t.soft.size() == 8);
  const std::vector<float> soft{0.25f, 0.75f, 0.9f, 0.1f, 0.6f, 0.4f, 0.05f, 0.95f};
  for (size_t i = 0; i < 8; ++i) CHECK(t.soft[i] == Approx(soft[i]));
  CHECK(t.dropped.empty());

  SECTION("without prob_ columns the extra rows are hard labels") {
    e.csv("id,label\nte4,left\nte5,right\n");
    Table h = e.load();
    REQUIRE(h.size() == 14);
    CHECK(h.extra_begin == 12);
    CHECK(h.soft.empty());
    CHECK(h.targets[12] == 0);
    CHECK(h.targets[13] == 1);
  }
  SECTION("data.extra_image_dir (relative to data.root, or absolute) and an absolute CSV path") {
    fs::create_directories(e.ds.root + "/pl");
    fs::copy_file(e.ds.root + "/test/te2.png", e.ds.root + "/pl/te2.png");
    e.dir.write("elsewhere/pl.csv", "id,label\nte2,left\n");
    e.o.extra_train_csv = e.dir / "elsewhere/pl.csv";
    e.o.extra_image_dir = "pl";
    Table a = e.load();
    REQUIRE(a.size() == 13);
    CHECK(fs::equivalent(a.rows[12].image, e.ds.root + "/pl/te2.png"));
    e.o.extra_image_dir = fs::absolute(e.ds.root + "/pl").string();
    Table b = e.load();
    REQUIRE(b.size() == 13);
    CHECK(fs::equivalent(b.rows[12].image, e.ds.root + "/pl/te2.png"));
  }
}

TEST_CASE("extra rows get fold -1, the training rows keep the split they have without extras", "[unit][data][pseudo]") {
  Extra e;
  e.csv(kSoft);
  Table t = e.load();
  Table base = e.base();
  REQUIRE(base.size() == 12);
  REQUIRE(base.extra_begin < 0);
  kg::data::CvOptions cv;
  cv.folds = 3;
  for (uint64_t seed : {1ULL, 7ULL, 42ULL}) {
    INFO("seed " << seed);
    auto with = kg::data::assign_folds(t, cv, seed);
    auto without = kg::data::assign_folds(base, cv, seed);
    REQUIRE(with.size() == 16);
    REQUIRE(without.size() == 12);
    for (size_t i = 0; i < 12; ++i) CHECK(with[i] == without[i]);
    for (size_t i = 12; i < 16; ++i) CHECK(with[i] == -1);
    for (int64_t k = 0; k < 3; ++k) {
      INFO("held-out fold " << k);
      cv.held_out = k;
      auto s = kg::data::split_folds(t, cv, seed);
      auto s0 = kg::data::split_folds(base, cv, seed);
      CHECK(s.valid == s0.valid);  // the same validation rows...
      CHECK_FALSE(s.valid.empty());
      for (auto r : s.valid) CHECK(r < 12);  // ...never an extra row
      std::set<int64_t> train(s.train.begin(), s.train.end());
      for (int64_t r = 12; r < 16; ++r) CHECK(train.count(r) == 1);  // every extra row trains in every fold
      CHECK(s.train.size() + s.valid.size() == 16);
    }
  }
}

TEST_CASE("a batch with soft extra rows has float [B, K] targets, one-hot for the hard rows", "[unit][data][pseudo]") {
  Extra e;
  e.csv(kSoft);
  Table t = e.load();
  kg::data::Pipeline p(kg::config::json::array(), kg::data::geometry(e.o), false);
  kg::data::LoaderOptions lo;
  lo.batch_size = 4;
  {
    // tr0 (left), tr1 (right), te0 (0.25, 0.75), te1 (0.9, 0.1)
    kg::data::Loader l(t, {0, 1, 12, 13}, p, lo);
    kg::data::Batch b;
    REQUIRE(l.next(b));
    REQUIRE(b.targets.defined());
    CHECK(b.targets.scalar_type() == torch::kFloat);
    REQUIRE(b.targets.dim() == 2);
    REQUIRE(b.targets.size(0) == 4);
    REQUIRE(b.targets.size(1) == 2);
    auto want = torch::tensor({1.0f, 0.0f, 0.0f, 1.0f, 0.25f, 0.75f, 0.9f, 0.1f}).view({4, 2});
    CHECK(torch::allclose(b.targets, want));
    CHECK_FALSE(l.next(b));
  }
  {
    // Extra rows alone, in another order.
    kg::data::Loader l(t, {15, 14}, p, lo);
    kg::data::Batch b;
    REQUIRE(l.next(b));
    auto want = torch::tensor({0.05f, 0.95f, 0.6f, 0.4f}).view({2, 2});
    CHECK(torch::allclose(b.targets, want));
  }
  {
    // No extra row in the batch: class indices as usual.
    kg::data::Loader l(t, {0, 1, 2, 3}, p, lo);
    kg::data::Batch b;
    REQUIRE(l.next(b));
    CHECK(b.targets.scalar_type() == torch::kLong);
    CHECK(torch::equal(b.targets, torch::tensor({0, 1, 0, 1}, torch::kLong)));
  }
  {
    // Hard extra rows: class indices too.
    e.csv("id,label\nte4,left\nte5,right\n");
    Table h = e.load();
    kg::data::Loader l(h, {1, 12, 13}, p, lo);
    kg::data::Batch b;
    REQUIRE(l.next(b));
    CHECK(b.targets.scalar_type() == torch::kLong);
    CHECK(torch::equal(b.targets, torch::tensor({1, 0, 1}, torch::kLong)));
  }
  {
    // The whole table with the training loader's shuffle: every row's target where it belongs.
    lo.shuffle = true;
    lo.seed = 5;
    kg::data::Loader l(t, all_rows(t), p, lo);
    kg::data::Batch b;
    int seen = 0;
    while (l.next(b)) {
      const bool has_extra = std::any_of(b.rows.begin(), b.rows.end(), [](int64_t r) { return r >= 12; });
      for (size_t i = 0; i < b.rows.size(); ++i, ++seen) {
        const int64_t r = b.rows[i];
        if (!has_extra) {
          CHECK(b.targets[static_cast<int64_t>(i)].item<int64_t>() == r % 2);
          continue;
        }
        auto row = b.targets[static_cast<int64_t>(i)];
        if (r < 12) {
          CHECK(row[r % 2].item<float>() == 1.0f);
          CHECK(row[1 - r % 2].item<float>() == 0.0f);
        } else {
          CHECK(row[0].item<float>() == Approx(t.soft[static_cast<size_t>((r - 12) * 2)]));
          CHECK(row.sum().item<float>() == Approx(1.0f));
        }
      }
    }
    CHECK(seen == 16);
  }
}

TEST_CASE("binary and multilabel extra rows: prob_ columns become the targets", "[unit][data][pseudo]") {
  Extra e;
  SECTION("binary: prob_<positive class>") {
    e.o.task = kg::Task::binary;
    e.csv("id,label,prob_right\nte0,right,0.8\nte1,left,0.3\n");
    Table t = e.load();
    REQUIRE(t.size() == 14);
    CHECK(t.extra_begin == 12);
    REQUIRE(t.value_dim == 1);
    REQUIRE(t.values.size() == 14);
    CHECK(t.values[0] == 0.0f);  // tr0 left
    CHECK(t.values[1] == 1.0f);  // tr1 right
    CHECK(t.values[12] == Approx(0.8f));
    CHECK(t.values[13] == Approx(0.3f));
    CHECK(t.soft.empty());
    kg::data::CvOptions cv;
    cv.folds = 3;
    auto f = kg::data::assign_folds(t, cv, 3);
    CHECK(f[12] == -1);
    CHECK(f[13] == -1);
  }
  SECTION("binary without prob_ column: the label's 0/1") {
    e.o.task = kg::Task::binary;
    e.csv("id,label\nte0,right\nte1,left\n");
    Table t = e.load();
    REQUIRE(t.values.size() == 14);
    CHECK(t.values[12] == 1.0f);
    CHECK(t.values[13] == 0.0f);
  }
  SECTION("multilabel: one prob_ column per label") {
    e.o.task = kg::Task::multilabel;
    e.csv("id,label,prob_left,prob_right\nte0,left right,0.7,0.6\nte1,,0.2,0.1\n");
    Table t = e.load();
    REQUIRE(t.size() == 14);
    REQUIRE(t.value_dim == 2);
    REQUIRE(t.values.size() == 28);
    CHECK(t.values[0] == 1.0f);  // tr0: left
    CHECK(t.values[1] == 0.0f);
    CHECK(t.values[24] == Approx(0.7f));
    CHECK(t.values[25] == Approx(0.6f));
    CHECK(t.values[26] == Approx(0.2f));
    CHECK(t.values[27] == Approx(0.1f));
  }
  SECTION("binary: a probability outside [0, 1] is a bad row") {
    e.o.task = kg::Task::binary;
    e.csv("id,label,prob_right\nte0,right,0.8\nte1,left,1.3\n");
    try {
      e.load();
      FAIL("no DataError");
    } catch (const kg::DataError& err) {
      std::string m = err.what();
      CHECK(m.find("te1") != std::string::npos);
      CHECK(m.find("prob_right") != std::string::npos);
    }
  }
}

TEST_CASE("bad extra rows follow data.on_bad_row", "[unit][data][pseudo]") {
  Extra e;
  auto message = [&](bool scan = true) {
    try {
      e.load(scan);
    } catch (const kg::DataError& err) {
      return std::string(err.what());
    }
    FAIL("no DataError");
    return std::string();
  };
  SECTION("an id that is also a training row") {
    e.csv("id,label\nte0,left\ntr3,right\n");
    auto m = message(false);
    CHECK(m.find("tr3") != std::string::npos);
    CHECK(m.find("training row") != std::string::npos);
    CHECK(m.find("row 2") != std::string::npos);
  }
  SECTION("an id twice in the extra CSV") {
    e.csv("id,label\nte0,left\nte0,right\n");
    auto m = message();
    CHECK(m.find("duplicate id") != std::string::npos);
  }
  SECTION("probabilities that do not sum to 1") {
    e.csv("id,label,prob_left,prob_right\nte0,left,0.5,0.5\nte1,left,0.6,0.6\n");
    auto m = message();
    CHECK(m.find("te1") != std::string::npos);
    CHECK(m.find("sum") != std::string::npos);
    CHECK(m.find("te0") == std::string::npos);
  }
  SECTION("a probability that is not a number") {
    e.csv("id,label,prob_left,prob_right\nte0,left,abc,0.5\n");
    auto m = message();
    CHECK(m.find("prob_left") != std::string::npos);
    CHECK(m.find("abc") != std::string::npos);
  }
  SECTION("some prob_ columns but not all: the missing ones are named") {
    e.csv("id,label,prob_left\nte0,left,1.0\n");
    auto m = message();
    CHECK(m.find("prob_right") != std::string::npos);
  }
  SECTION("an unknown label") {
    e.csv("id,label\nte0,up\n");
    auto m = message();
    CHECK(m.find("\"up\"") != std::string::npos);
  }
  SECTION("a missing image") {
    e.csv("id,label\nte0,left\nnope,right\n");
    auto m = message();
    CHECK(m.find("nope") != std::string::npos);
  }
  SECTION("skip: bad rows are dropped, the soft targets stay with their rows") {
    e.o.on_bad_row = "skip";
    e.csv(
        "id,label,prob_left,prob_right\n"
        "te0,left,0.8,0.2\n"
        "te1,left,0.6,0.6\n"  // sums to 1.2
        "tr4,left,1,0\n"      // a training id
        "te2,right,0.1,0.9\n"
        "missing,right,0.3,0.7\n"  // no image
        "te3,right,0.35,0.65\n");
    Table t = e.load();
    REQUIRE(t.size() == 15);
    CHECK(t.extra_begin == 12);
    CHECK(t.rows[12].id == "te0");
    CHECK(t.rows[13].id == "te2");
    CHECK(t.rows[14].id == "te3");
    CHECK(t.targets[13] == 1);
    REQUIRE(t.soft.size() == 6);
    const std::vector<float> want{0.8f, 0.2f, 0.1f, 0.9f, 0.35f, 0.65f};
    for (size_t i = 0; i < 6; ++i) CHECK(t.soft[i] == Approx(want[i]));
    std::set<std::string> dropped;
    for (auto& d : t.dropped) dropped.insert(d.id);
    CHECK(dropped == std::set<std::string>{"te1", "tr4", "missing"});
    for (auto& d : t.dropped) CHECK(d.reason.find("extra_train_csv") != std::string::npos);
    // The training rows are untouched: tr4 is still there, once.
    int tr4 = 0;
    for (auto& r : t.rows) tr4 += r.id == "tr4";
    CHECK(tr4 == 1);
  }
}

}  // namespace KG_UNITY_ID
}  // namespace
