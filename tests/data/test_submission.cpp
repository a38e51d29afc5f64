// Submission files in the competition's sample_submission format, for every task. The expected files
// are written out literally from the prediction tables below.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include <torch/torch.h>

#include "core/error.h"
#include "data/options.h"
#include "data/submission.h"
#include "data/table.h"
#include "support/temp_dir.h"

namespace {
namespace KG_UNITY_ID {  // each test file's own names in a unity batch (CMakeLists.txt)

using kg::data::ClassList;
using kg::data::DataOptions;
using kg::data::format_submission;
using kg::data::SubmissionFormat;
using kg::data::Table;
using kg::data::Task;

namespace {

struct Sub {
  kg::test::TempDir dir;
  DataOptions o;
  Table test;
  ClassList classes;

  Sub(Task task, std::vector<std::string> names, std::vector<std::string> ids) {
    o.root = dir.str();
    o.task = task;
    test.csv_path = "test.csv";
    test.task = task;
    for (size_t i = 0; i < ids.size(); ++i) {
      kg::data::Row r;
      r.id = ids[i];
      r.csv_row = static_cast<int64_t>(i + 1);
      test.rows.push_back(r);
    }
    classes.names = std::move(names);
    classes.numeric = false;
    classes.task = task;
  }
  void sample(const std::string& text) {
    dir.write("sample_submission.csv", text);
    o.sample_submission = "sample_submission.csv";
  }
  std::string format(const at::Tensor& preds, const SubmissionFormat& f = {}) const {
    return format_submission(o, test, preds, classes, f);
  }
  // The DataError's message (fails the test when there is none).
  std::string error(const at::Tensor& preds, const SubmissionFormat& f = {}) const {
    try {
      format(preds, f);
    } catch (const kg::DataError& e) {
      return e.what();
    }
    FAIL("no DataError");
    return "";
  }
};

at::Tensor preds(const std::vector<std::vector<float>>& rows) {
  const int64_t n = static_cast<int64_t>(rows.size()), k = static_cast<int64_t>(rows[0].size());
  auto t = torch::empty({n, k});
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < k; ++j) t[i][j] = rows[static_cast<size_t>(i)][static_cast<size_t>(j)];
  return t;
}

size_t count(const std::string& s, const std::string& what) {
  size_t n = 0;
  for (size_t p = s.find(what); p != std::string::npos; p = s.find(what, p + 1)) ++n;
  return n;
}

}  // namespace

TEST_CASE("multiclass submission follows a shuffled sample's id order and column order", "[unit][data][submission]") {
  Sub s(Task::multiclass, {"cat", "dog", "eel"}, {"a", "b", "c", "d"});
  // a -> cat, b -> eel, c -> dog, d -> cat
  auto p = preds({{0.7f, 0.2f, 0.1f}, {0.1f, 0.3f, 0.6f}, {0.2f, 0.5f, 0.3f}, {0.4f, 0.35f, 0.25f}});

  SECTION("no sample: id and label in the test table's order") {
    CHECK(s.format(p) == "id,label\na,cat\nb,eel\nc,dog\nd,cat\n");
  }
  SECTION("the sample's row order") {
    s.sample("id,label\nc,cat\na,cat\nd,cat\nb,cat\n");
    CHECK(s.format(p) == "id,label\nc,dog\na,cat\nd,cat\nb,eel\n");
  }
  SECTION("the sample's column order, the id column not first") {
    s.sample("label,id\nx,d\nx,b\nx,a\nx,c\n");
    CHECK(s.format(p) == "label,id\ncat,d\neel,b\ncat,a\ndog,c\n");
  }
  SECTION("probability columns named by class, in the sample's order") {
    s.sample("id,eel,cat,dog\nb,0,0,0\nd,0,0,0\nc,0,0,0\na,0,0,0\n");
    CHECK(s.format(p) ==
          "id,eel,cat,dog\n"
          "b,0.6,0.1,0.3\n"
          "d,0.25,0.4,0.35\n"
          "c,0.3,0.2,0.5\n"
          "a,0.1,0.7,0.2\n");
  }
  SECTION("a label column beside one probability column") {
    s.sample("id,dog,label\nc,,\na,,\nb,,\nd,,\n");
    CHECK(s.format(p) == "id,dog,label\nc,0.5,dog\na,0.2,cat\nb,0.3,eel\nd,0.35,cat\n");
  }
  SECTION("ids keep the sample's spelling, and a different id column name") {
    s.o.id_col = "image_id";
    s.sample("image_id,label\nd,\nc,\nb,\na,\n");
    CHECK(s.format(p) == "image_id,label\nd,cat\nc,dog\nb,eel\na,cat\n");
  }
  SECTION("numeric classes keep their spelling") {
    s.classes.names = {"0", "1", "2"};
    s.classes.numeric = true;
    s.sample("id,label\nb,0\na,0\nc,0\nd,0\n");
    CHECK(s.format(p) == "id,label\nb,2\na,0\nc,1\nd,0\n");
  }
}

TEST_CASE("a sample whose ids differ from the test table is a DataError listing the first differences",
          "[unit][data][submission]") {
  Sub s(Task::multiclass, {"cat", "dog"}, {"a", "b", "c", "d"});
  auto p = preds({{0.9f, 0.1f}, {0.9f, 0.1f}, {0.9f, 0.1f}, {0.9f, 0.1f}});
  SECTION("one id replaced") {
    s.sample("id,label\nd,cat\nzz,cat\nb,cat\na,cat\n");
    auto m = s.error(p);
    CHECK(m.find("zz") != std::string::npos);     // in the sample, not in the test table
    CHECK(m.find("id c ") != std::string::npos);  // in the test table, not in the sample
    CHECK(m.find("row 2") != std::string::npos);  // where zz is
    CHECK(m.find("2 differences") != std::string::npos);
  }
  SECTION("an id twice in the sample") {
    s.sample("id,label\nd,cat\nb,cat\na,cat\nc,cat\nb,cat\n");
    auto m = s.error(p);
    CHECK(m.find("id b ") != std::string::npos);
  }
  SECTION("a missing row") {
    s.sample("id,label\nd,cat\nb,cat\na,cat\n");
    auto m = s.error(p);
    CHECK(m.find("id c ") != std::string::npos);
    CHECK(m.find("missing") != std::string::npos);
  }
  SECTION("many differences: the first 10 are listed, and how many there are") {
    std::vector<std::string> ids;
    std::string sample = "id,label\n";
    for (int i = 0; i < 15; ++i) ids.push_back("t" + std::to_string(i)), sample += "s" + std::to_string(i) + ",cat\n";
    Sub m(Task::multiclass, {"cat", "dog"}, ids);
    m.sample(sample);
    auto q = torch::full({15, 2}, 0.5f);
    auto msg = m.error(q);
    CHECK(msg.find("30 differences") != std::string::npos);
    CHECK(count(msg, "\n  - ") == 10);
    CHECK(msg.find("id s0 ") != std::string::npos);
    CHECK(msg.find("id s9 ") != std::string::npos);
    CHECK(msg.find("id s10 ") == std::string::npos);
  }
}

TEST_CASE("a sample column kgtrain cannot fill is a DataError naming it", "[unit][data][submission]") {
  Sub s(Task::multiclass, {"cat", "dog"}, {"a", "b"});
  auto p = preds({{0.9f, 0.1f}, {0.2f, 0.8f}});
  s.sample("id,label,weight\na,cat,1\nb,cat,1\n");
  auto m = s.error(p);
  CHECK(m.find("\"weight\"") != std::string::npos);
  CHECK(m.find("label") != std::string::npos);  // what is allowed
  CHECK(m.find("cat") != std::string::npos);
  SECTION("a sample without the id column") {
    s.sample("key,label\na,cat\nb,cat\n");
    CHECK_THROWS_AS(s.format(p), kg::DataError);
  }
}

TEST_CASE("binary submission: the positive class's probability, or the class by threshold",
          "[unit][data][submission]") {
  Sub s(Task::binary, {"neg", "pos"}, {"a", "b", "c", "d"});
  auto p = preds({{0.8f}, {0.3f}, {0.5f}, {0.1f}});
  s.sample("id,label\nd,0\nc,0\nb,0\na,0\n");
  SECTION("auto: the probability") { CHECK(s.format(p) == "id,label\nd,0.1\nc,0.5\nb,0.3\na,0.8\n"); }
  SECTION("probability") {
    CHECK(s.format(p, SubmissionFormat{"probability", {}}) == "id,label\nd,0.1\nc,0.5\nb,0.3\na,0.8\n");
  }
  SECTION("label: the class at the default threshold 0.5 (inclusive)") {
    CHECK(s.format(p, SubmissionFormat{"label", {}}) == "id,label\nd,neg\nc,pos\nb,neg\na,pos\n");
  }
  SECTION("label with tta.threshold") {
    CHECK(s.format(p, SubmissionFormat{"label", {0.25}}) == "id,label\nd,neg\nc,pos\nb,pos\na,pos\n");
    CHECK(s.format(p, SubmissionFormat{"label", {0.9}}) == "id,label\nd,neg\nc,neg\nb,neg\na,neg\n");
  }
  SECTION("class-name columns: each class's probability") {
    s.sample("id,pos,neg\nb,,\na,,\nd,,\nc,,\n");
    CHECK(s.format(p) == "id,pos,neg\nb,0.3,0.7\na,0.8,0.2\nd,0.1,0.9\nc,0.5,0.5\n");
  }
  SECTION("probabilities file: the positive class only") {
    CHECK(kg::data::format_probabilities(s.o, s.test, p, s.classes) == "id,pos\na,0.8\nb,0.3\nc,0.5\nd,0.1\n");
    CHECK(kg::data::output_names(s.classes) == std::vector<std::string>{"pos"});
  }
}

TEST_CASE("multilabel submission in one label column: labels at or above the threshold, joined",
          "[unit][data][submission]") {
  Sub s(Task::multilabel, {"a", "b", "c"}, {"r0", "r1", "r2"});
  auto p = preds({{0.9f, 0.2f, 0.6f}, {0.1f, 0.1f, 0.1f}, {0.5f, 0.7f, 0.4f}});
  s.o.label_cols = {"tags"};
  s.sample("id,tags\nr2,\nr0,\nr1,\n");
  SECTION("threshold 0.5") { CHECK(s.format(p) == "id,tags\nr2,a b\nr0,a c\nr1,\n"); }
  SECTION("per-class thresholds and data.label_sep") {
    s.o.label_sep = "|";
    CHECK(s.format(p, SubmissionFormat{"auto", {0.95, 0.15, 0.5}}) == "id,tags\nr2,b\nr0,b|c\nr1,\n");
  }
  SECTION("one threshold for every label") {
    CHECK(s.format(p, SubmissionFormat{"label", {0.05, 0.05, 0.05}}) == "id,tags\nr2,a b c\nr0,a b c\nr1,a b c\n");
  }
  SECTION("label-name columns: each label's probability") {
    s.sample("id,c,a\nr1,,\nr0,,\nr2,,\n");
    CHECK(s.format(p) == "id,c,a\nr1,0.1,0.1\nr0,0.6,0.9\nr2,0.4,0.5\n");
  }
}

TEST_CASE("multilabel submission with one column per label", "[unit][data][submission]") {
  // Labels in the recipe's (unsorted) order: outputs zeta, alpha, mid.
  Sub s(Task::multilabel, {"zeta", "alpha", "mid"}, {"x", "y"});
  s.o.label_cols = {"zeta", "alpha", "mid"};
  auto p = preds({{0.9f, 0.2f, 0.6f}, {0.3f, 0.75f, 0.5f}});
  SECTION("no sample: the label columns in the recipe's order") {
    CHECK(s.format(p) == "id,zeta,alpha,mid\nx,0.9,0.2,0.6\ny,0.3,0.75,0.5\n");
  }
  s.sample("id,mid,zeta,alpha\ny,0,0,0\nx,0,0,0\n");
  SECTION("auto: probabilities, in the sample's columns") {
    CHECK(s.format(p) == "id,mid,zeta,alpha\ny,0.5,0.3,0.75\nx,0.6,0.9,0.2\n");
  }
  SECTION("label: 0/1 by the per-label thresholds") {
    CHECK(s.format(p, SubmissionFormat{"label", {}}) == "id,mid,zeta,alpha\ny,1,0,1\nx,1,1,0\n");
    // zeta 0.95, alpha 0.1, mid 0.55
    CHECK(s.format(p, SubmissionFormat{"label", {0.95, 0.1, 0.55}}) == "id,mid,zeta,alpha\ny,0,0,1\nx,1,0,1\n");
  }
}

TEST_CASE("regression submission: the values, one column per target", "[unit][data][submission]") {
  Sub s(Task::regression, {"y1", "y2"}, {"p", "q", "r"});
  s.o.label_cols = {"y1", "y2"};
  auto v = preds({{3.25f, -1.5f}, {120.125f, 0.0f}, {-0.0625f, 7.0f}});
  SECTION("no sample") { CHECK(s.format(v) == "id,y1,y2\np,3.25,-1.5\nq,120.125,0\nr,-0.0625,7\n"); }
  SECTION("the sample's order") {
    s.sample("id,y2,y1\nr,0,0\np,0,0\nq,0,0\n");
    CHECK(s.format(v) == "id,y2,y1\nr,7,-0.0625\np,-1.5,3.25\nq,0,120.125\n");
  }
  SECTION("one target") {
    Sub one(Task::regression, {"target"}, {"p", "q"});
    one.o.label_cols = {"target"};
    one.sample("id,target\nq,0\np,0\n");
    CHECK(one.format(preds({{2.5f}, {-4.0f}})) == "id,target\nq,-4\np,2.5\n");
  }
  SECTION("a class-name column means nothing for regression") {
    s.sample("id,y1,y3\np,0,0\nq,0,0\nr,0,0\n");
    auto m = s.error(v);
    CHECK(m.find("\"y3\"") != std::string::npos);
  }
}

TEST_CASE("the probabilities file: id, then one column per output in output order", "[unit][data][submission]") {
  Sub s(Task::multiclass, {"cat", "dog", "eel"}, {"a", "b"});
  auto p = preds({{0.7f, 0.2f, 0.1f}, {0.1f, 0.3f, 0.6f}});
  s.sample("id,label\nb,x\na,x\n");  // not used: the test table's order
  CHECK(kg::data::format_probabilities(s.o, s.test, p, s.classes) == "id,cat,dog,eel\na,0.7,0.2,0.1\nb,0.1,0.3,0.6\n");
  CHECK(kg::data::output_names(s.classes) == std::vector<std::string>{"cat", "dog", "eel"});
}

}  // namespace KG_UNITY_ID
}  // namespace
