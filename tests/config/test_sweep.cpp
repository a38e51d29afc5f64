// Hydra's multirun grammar: value lists, range(), choice(), quoting and brackets, the product's order,
// and the words it refuses.
#include <catch2/catch.hpp>

#include "config/sweep.h"
#include "core/error.h"

namespace {
namespace KG_UNITY_ID {  // each test file's own names in a unity batch (CMakeLists.txt)

using kg::config::parse_sweep;

namespace {
std::string problem(const std::vector<std::string>& words) {
  try {
    parse_sweep(words, 100);
  } catch (const kg::ConfigError& e) {
    return e.what();
  }
  return "";
}
}  // namespace

TEST_CASE("sweep: comma lists and range() multiply, the first key changing slowest", "[unit][config]") {
  auto s = parse_sweep(
      {"r.toml", "optim.lr=1e-3,3e-4", "model=resnet18,resnet34", "train.epochs=range(4,12,4)", "train.batch_size=64"});
  CHECK(s.fixed == std::vector<std::string>{"r.toml", "train.batch_size=64"});
  REQUIRE(s.axes.size() == 3);
  CHECK(s.axes[2].values == std::vector<std::string>{"4", "8"});
  const auto runs = s.runs();
  REQUIRE(runs.size() == 8);
  CHECK(runs[0] == std::vector<std::string>{"optim.lr=1e-3", "model=resnet18", "train.epochs=4"});
  CHECK(runs[1] == std::vector<std::string>{"optim.lr=1e-3", "model=resnet18", "train.epochs=8"});
  CHECK(runs[2] == std::vector<std::string>{"optim.lr=1e-3", "model=resnet34", "train.epochs=4"});
  CHECK(runs[7] == std::vector<std::string>{"optim.lr=3e-4", "model=resnet34", "train.epochs=8"});
}

TEST_CASE("sweep: range() as Python's (stop excluded), floats, negative steps, choice()", "[unit][config]") {
  auto values = [](const std::string& w) { return parse_sweep({w}, 100).axes.at(0).values; };
  CHECK(values("a=range(3)") == std::vector<std::string>{"0", "1", "2"});
  CHECK(values("a=range(1, 5)") == std::vector<std::string>{"1", "2", "3", "4"});
  CHECK(values("a=range(10,0,-4)") == std::vector<std::string>{"10", "6", "2"});
  CHECK(values("a=range(0,1,0.25)") == std::vector<std::string>{"0", "0.25", "0.5", "0.75"});
  CHECK(values("a=range(0.1,0.4,0.1)") == std::vector<std::string>{"0.1", "0.2", "0.3"});
  CHECK(values("model=choice(resnet9, resnet18)") == std::vector<std::string>{"resnet9", "resnet18"});
  CHECK(values("+ema.decay=0.99,0.999") == std::vector<std::string>{"0.99", "0.999"});
  CHECK(parse_sweep({"a=range(2,3)"}, 100).size() == 1);  // one value is still a (one-run) sweep axis
}

TEST_CASE("sweep: brackets and quotes keep commas inside one value", "[unit][config]") {
  auto s = parse_sweep({"data.augment=[{name=\"hflip\"},{name=\"vflip\"}]", "run.name='a,b'", "cv.fold=[0,1],[2,3]"});
  CHECK(s.fixed == std::vector<std::string>{"data.augment=[{name=\"hflip\"},{name=\"vflip\"}]", "run.name='a,b'"});
  REQUIRE(s.axes.size() == 1);
  CHECK(s.axes[0].values == std::vector<std::string>{"[0,1]", "[2,3]"});
  CHECK(kg::config::split_top_level("a, \"b,c\" ,d") == std::vector<std::string>{"a", "\"b,c\"", "d"});
}

TEST_CASE("sweep: malformed words are recipe errors that name them", "[unit][config]") {
  CHECK(problem({"a=range(1,x)"}).find("a=range(1,x): range() takes numbers") != std::string::npos);
  CHECK(problem({"a=range(1,5,0)"}).find("step must not be 0") != std::string::npos);
  CHECK(problem({"a=range(5,1)"}).find("gives no value") != std::string::npos);
  CHECK(problem({"a=range(1,2,3,4)"}).find("range() takes") != std::string::npos);
  CHECK(problem({"a=1,,2"}).find("an empty value") != std::string::npos);
  CHECK(problem({"a=1,2,"}).find("an empty value") != std::string::npos);
  CHECK(problem({"a=1,2", "a=3,4"}).find("a is swept twice") != std::string::npos);
  CHECK(problem({"a=interval(0,1)"}).find("not a grid sweep") != std::string::npos);
  CHECK(problem({"a=range(0,1000)"}).find("more than 100 values") != std::string::npos);
  CHECK(problem({"a=range(0,20)", "b=range(0,20)"}).find("400 runs; at most 100") != std::string::npos);
  CHECK(problem({"a=1,2", "~b", "c"}).empty());
}

}  // namespace KG_UNITY_ID
}  // namespace
