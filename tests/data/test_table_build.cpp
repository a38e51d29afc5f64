// Class inference limits (data.max_classes): an id column taken for the label must not ask for a billion classes.
#include <catch2/catch.hpp>

#include "core/error.h"
#include "data/csv.h"
#include "data/options.h"
#include "data/table.h"

namespace {
namespace KG_UNITY_ID {  // each test file's own names in a unity batch (CMakeLists.txt)

namespace {

std::string classes_error(const std::string& csv_text, const std::string& task, int64_t max_classes = 100000) {
  const auto csv = kg::data::parse_csv(csv_text, "train.csv");
  kg::data::DataOptions o;
  o.task = kg::parse_task(task);
  o.max_classes = max_classes;
  kg::data::TableSource src;
  src.csv = &csv;
  src.id_col = "id";
  src.label_cols = {"label"};
  try {
    auto c = kg::data::infer_classes(o, src);
    return "(" + std::to_string(c.size()) + " classes)";
  } catch (const kg::DataError& e) {
    return e.what();
  }
}

}  // namespace

TEST_CASE("class inference refuses more classes than data.max_classes before making them", "[unit][data]") {
  // An integer label of 1.3e15 once asked for that many class names (tests/fuzz/regressions/csv): out of memory.
  CHECK_THAT(classes_error("id,label\n1,0\n2,1304902112095321\n", "multiclass"),
             Catch::Contains("train.csv column label: integer labels name classes 0, 1, 2, ... and its largest label, "
                             "1304902112095321, asks for more of them than data.max_classes = 100000"));
  CHECK_THAT(classes_error("id,label\n1,0\n2,9223372036854775807\n", "multiclass"),  // no overflow of max + 1
             Catch::Contains("9223372036854775807"));
  // At the limit: classes 0..99999.
  CHECK(classes_error("id,label\n1,0\n2,99999\n", "multiclass") == "(100000 classes)");
  // String labels and multilabel names count the distinct ones.
  CHECK_THAT(classes_error("id,label\n1,a\n2,b\n3,c\n4,d\n", "multiclass", 3),
             Catch::Contains("holds 4 distinct labels, more than data.max_classes = 3"));
  CHECK(classes_error("id,label\n1,a\n2,b\n3,c\n", "multiclass", 3) == "(3 classes)");
  CHECK_THAT(classes_error("id,label\n1,a b\n2,c d\n", "multilabel", 3),
             Catch::Contains("names 4 distinct labels, more than data.max_classes = 3"));
  // Binary tasks have two classes whatever the integers (0/1 checked per row).
  CHECK(classes_error("id,label\n1,0\n2,1\n", "binary", 2) == "(2 classes)");
}

}  // namespace KG_UNITY_ID
}  // namespace
