#include <catch2/catch.hpp>

#include "config/resolve.h"
#include "core/error.h"

namespace {
namespace KG_UNITY_ID {  // each test file's own names in a unity batch (CMakeLists.txt)

using namespace kg::config;

namespace {
using Env = std::map<std::string, std::string>;

Tree run(const std::string& toml, const Env& env = {}) {
  Tree t = parse_toml_string(toml, "r.toml");
  interpolate(t, env);
  return t;
}

std::vector<std::string> problems_of(const std::string& toml, const Env& env = {}) {
  try {
    run(toml, env);
  } catch (const kg::ConfigError& e) {
    return e.problems();
  }
  return {};
}
}  // namespace

TEST_CASE("${key} inside a string is replaced by the key's value", "[unit]") {
  Tree t = run(R"(
[data]
root = "/data/fmnist"
train = "${data.root}/train.csv"
[optim]
lr = 0.001
epochs = 5
tag = "lr${optim.lr}-e${optim.epochs}"
)");
  CHECK(t.at("data.train").value == "/data/fmnist/train.csv");
  CHECK(t.at("optim.tag").value == "lr0.001-e5");
  // The value keeps the origin of the string that was written.
  CHECK(t.at("data.train").origin.str() == "r.toml:4:9");
}

TEST_CASE("a string that is exactly one ${key} takes the value's type", "[unit]") {
  Tree t = run(R"(
[base]
epochs = 12
lr = 0.5
size = [28, 28]
on = true
[train]
epochs = "${base.epochs}"
lr = "${base.lr}"
size = "${base.size}"
on = "${base.on}"
label = " ${base.epochs}"
)");
  CHECK(t.at("train.epochs").value.is_number_integer());
  CHECK(t.at("train.epochs").value == 12);
  CHECK(t.at("train.lr").value == 0.5);
  CHECK(t.at("train.size").value == json::parse("[28, 28]"));
  CHECK(t.at("train.on").value == true);
  CHECK(t.at("train.label").value == " 12");
}

TEST_CASE("${env:VAR} and ${env:VAR,default}", "[unit]") {
  Tree t = run(R"(
home = "${env:HOME}/runs"
cache = "${env:KG_CACHE,/tmp/cache}"
empty = "${env:KG_NOPE,}"
set_empty = "x${env:KG_EMPTY,fallback}y"
)",
               {{"HOME", "/home/u"}, {"KG_EMPTY", ""}});
  CHECK(t.at("home").value == "/home/u/runs");
  CHECK(t.at("cache").value == "/tmp/cache");
  CHECK(t.at("empty").value == "");
  CHECK(t.at("set_empty").value == "xy");
}

TEST_CASE("an unset env var without default is an error naming it and the origin", "[unit]") {
  auto p = problems_of("a = 1\nroot = \"${env:KG_DATA}/x\"\n");
  REQUIRE(p.size() == 1);
  CHECK_THAT(p[0], Catch::Contains("KG_DATA is not set"));
  CHECK_THAT(p[0], Catch::Contains("root"));
  CHECK_THAT(p[0], Catch::Contains("r.toml:2:8"));
}

TEST_CASE("nested references resolve in dependency order, whatever the key order", "[unit]") {
  Tree t = run(R"(
a = "${b}/a"
b = "${c}/b"
c = "${d.e}"
[d]
e = "root"
)");
  CHECK(t.at("a").value == "root/b/a");
  CHECK(t.at("b").value == "root/b");
  CHECK(t.at("c").value == "root");
}

TEST_CASE("a reference cycle is one error naming the chain and its origin", "[unit]") {
  auto p = problems_of("a = \"${b}\"\nb = \"x${c.d}\"\nuser = \"${a}\"\n[c]\nd = \"${a}\"\n");
  REQUIRE(p.size() == 1);
  CHECK_THAT(p[0], Catch::Contains("interpolation cycle a -> b -> c.d -> a"));
  CHECK_THAT(p[0], Catch::Contains("(r.toml:1:5)"));
  auto self = problems_of("x = \"${x}\"\n");
  REQUIRE(self.size() == 1);
  CHECK_THAT(self[0], Catch::Contains("x -> x"));
}

TEST_CASE("unknown keys are reported with the key and origin, all at once", "[unit]") {
  auto p = problems_of(
      "[data]\nroot = \"/d\"\ntrain = \"${data.rot}/t\"\n[run]\ndir = \"${run.nme}\"\n"
      "both = \"${x.y}-${env:KG_UNSET}\"\n");
  REQUIRE(p.size() == 4);
  CHECK_THAT(p[0], Catch::Contains("data.train: ${data.rot} refers to an unknown key (r.toml:3:9)"));
  CHECK_THAT(p[1], Catch::Contains("run.both: ${x.y} refers to an unknown key"));
  CHECK_THAT(p[2], Catch::Contains("KG_UNSET"));
  CHECK_THAT(p[3], Catch::Contains("run.dir: ${run.nme}"));
}

TEST_CASE("a reference to a table or a malformed reference is an error", "[unit]") {
  auto p = problems_of("[optim]\nlr = 1\n[x]\nt = \"${optim}\"\nbad = \"${a b}\"\nopen = \"${optim.lr\"\n");
  REQUIRE(p.size() == 3);
  CHECK_THAT(p[0], Catch::Contains("bad reference ${a b}"));
  CHECK_THAT(p[1], Catch::Contains("unterminated"));
  CHECK_THAT(p[2], Catch::Contains("${optim} names a table"));
}

TEST_CASE("a backslash before a dollar-brace makes it literal text, not interpolated", "[unit]") {
  Tree t = run(R"(
a = 1
lit = '\${a} and ${a}'
whole = '\${a}'
ref = "${lit}"
)");
  CHECK(t.at("lit").value == "${a} and 1");
  CHECK(t.at("whole").value == "${a}");
  // An escaped reference stays literal when another string pulls it in.
  CHECK(t.at("ref").value == "${a} and 1");
}

TEST_CASE("strings inside arrays and inline tables are interpolated", "[unit]") {
  Tree t = run(R"(
size = 32
paths = ["${env:KG_R,/r}/a", "${size}"]
aug = [{name = "pad_crop", size = "${size}", note = "s=${size}"}]
)");
  CHECK(t.at("paths").value == json::parse(R"(["/r/a", 32])"));
  CHECK(t.at("aug").value[0]["size"] == 32);
  CHECK(t.at("aug").value[0]["note"] == "s=32");
}

TEST_CASE("keys absent from the tree fall back to defaults, which may interpolate too", "[unit]") {
  Tree t = parse_toml_string("[model]\nname = \"resnet18\"\n[out]\ndir = \"runs/${run.name}\"\n", "r.toml");
  json run_name = "${model.name}-baseline";
  json seed = 42;
  auto defaults = [&](const Tree&, const std::string& key) -> const json* {
    if (key == "run.name") return &run_name;
    if (key == "run.seed") return &seed;
    return nullptr;
  };
  interpolate(t, {}, defaults);
  CHECK(t.at("out.dir").value == "runs/resnet18-baseline");
  CHECK_FALSE(t.has("run.name"));  // defaults are looked up, not added
}

}  // namespace KG_UNITY_ID
}  // namespace
