#include <catch2/catch.hpp>

#include "config/resolve.h"
#include "core/error.h"
#include "support/temp_dir.h"

namespace {
namespace KG_UNITY_ID {  // each test file's own names in a unity batch (CMakeLists.txt)

using namespace kg::config;
using kg::test::TempDir;

namespace {
ResolveInput input(std::vector<std::string> recipes, std::vector<std::string> args = {}) {
  ResolveInput in;
  in.recipe_files = std::move(recipes);
  in.args = std::move(args);
  in.path_exists = [](const std::string&) { return false; };
  return in;
}

std::vector<std::string> problems_of(const ResolveInput& in) {
  try {
    resolve(in);
  } catch (const kg::ConfigError& e) {
    return e.problems();
  }
  FAIL("resolve did not throw ConfigError");
  return {};
}

bool never(const std::string&) { return false; }
}  // namespace

TEST_CASE("extends layers parents depth-first, tables deep-merge, arrays replace", "[unit]") {
  TempDir d;
  d.write("common/base.toml",
          "[optim]\nname = \"sgd\"\nlr = 0.1\nmomentum = 0.9\n"
          "[data]\naugment = [{name = \"hflip\"}, {name = \"pad_crop\"}]\norder = [\"base\"]\n");
  d.write("common/aug.toml", "extends = \"base.toml\"\n[data]\norder = [\"aug\"]\nsize = 28\n");
  d.write("common/sched.toml", "[optim]\nlr = 0.2\n[data]\norder = [\"sched\"]\n");
  std::string top = d.write("exp/top.toml",
                            "extends = [\"../common/aug.toml\", \"../common/sched.toml\"]\n"
                            "[optim]\nmomentum = 0.8\n[[data.augment]]\nname = \"rotate\"\n");
  Resolved r = resolve(input({top}));
  CHECK(r.tree.at("optim.name").value == "sgd");
  CHECK(r.tree.at("optim.lr").value == 0.2);
  CHECK(r.tree.at("optim.momentum").value == 0.8);
  CHECK(r.tree.at("data.order").value == json::parse(R"(["sched"])"));
  CHECK(r.tree.at("data.size").value == 28);
  CHECK(r.tree.at("data.augment").value == json::parse(R"([{"name": "rotate"}])"));
  CHECK_FALSE(r.tree.has("extends"));
  REQUIRE(r.layers.size() == 4);
  CHECK_THAT(r.layers[0], Catch::EndsWith("common/base.toml"));
  CHECK_THAT(r.layers[1], Catch::EndsWith("common/aug.toml"));
  CHECK_THAT(r.layers[2], Catch::EndsWith("common/sched.toml"));
  CHECK(r.layers[3] == top);
  CHECK(r.tree.at("optim.lr").origin.str() == d / "common/sched.toml" + ":2:6");
}

TEST_CASE("a shared base is applied once, so a later sibling does not undo an earlier one", "[unit]") {
  TempDir d;
  d.write("base.toml", "a = 1\nb = 1\n");
  d.write("x.toml", "extends = \"base.toml\"\na = 2\n");
  d.write("y.toml", "extends = \"base.toml\"\nb = 3\n");
  std::string top = d.write("top.toml", "extends = [\"x.toml\", \"y.toml\"]\n");
  Resolved r = resolve(input({top}));
  CHECK(r.tree.at("a").value == 2);
  CHECK(r.tree.at("b").value == 3);
  CHECK(r.layers.size() == 4);
}

TEST_CASE("an extends cycle is an error naming the chain", "[unit]") {
  TempDir d;
  d.write("b.toml", "extends = \"c.toml\"\n");
  d.write("c.toml", "extends = [\"a.toml\"]\n");
  std::string a = d.write("a.toml", "extends = \"b.toml\"\n");
  auto p = problems_of(input({a}));
  REQUIRE(p.size() == 1);
  CHECK(p[0] == "extends cycle: " + a + " -> " + d / "b.toml" + " -> " + d / "c.toml" + " -> " + d / "a.toml");
}

TEST_CASE("a missing extends target cites the entry's file:line:col", "[unit]") {
  TempDir d;
  d.write("ok.toml", "x = 1\n");
  std::string a = d.write("a.toml", "# top\nextends = [\"ok.toml\", \"nope.toml\", \"sub/gone.toml\"]\n");
  auto p = problems_of(input({a}));
  REQUIRE(p.size() == 2);
  CHECK(p[0] == a + ":2:23: extends target not found: " + d / "nope.toml");
  CHECK(p[1] == a + ":2:36: extends target not found: " + d / "sub/gone.toml");
  auto bad = problems_of(input({d.write("b.toml", "extends = 3\n")}));
  CHECK_THAT(bad.at(0), Catch::Contains("extends: expected a path or a list of paths"));
}

TEST_CASE("several recipe files layer left to right, missing ones are reported", "[unit]") {
  TempDir d;
  std::string a = d.write("a.toml", "[train]\nepochs = 1\nbs = 64\n");
  std::string b = d.write("more/b.toml", "[train]\nepochs = 2\n");
  Resolved r = resolve(input({a, b}));
  CHECK(r.tree.at("train.epochs").value == 2);
  CHECK(r.tree.at("train.bs").value == 64);
  CHECK(r.layers == std::vector<std::string>{a, b});

  auto p = problems_of(input({a, d / "x.toml", d / "y.toml"}));
  CHECK(p ==
        std::vector<std::string>{"recipe file not found: " + d / "x.toml", "recipe file not found: " + d / "y.toml"});
  auto syntax = problems_of(input({d.write("bad.toml", "a = [1,\n")}));
  CHECK_THAT(syntax.at(0), Catch::StartsWith(d / "bad.toml" + ":"));
}

TEST_CASE("config groups come from a recipe's sibling folder, then the builtin dir", "[unit]") {
  TempDir d;
  std::string r = d.write("mine/r.toml", "[model]\nname = \"base\"\ndepth = 1\n");
  d.write("mine/model/resnet18.toml", "[model]\nname = \"resnet18\"\n");
  d.write("builtin/model/resnet18.toml", "[model]\nname = \"builtin18\"\n");
  d.write("builtin/model/resnet50.toml", "[model]\nname = \"resnet50\"\n");
  d.write("builtin/optim/sgd.toml", "[optim]\nname = \"sgd\"\n");
  ResolveInput in = input({r}, {"model.depth=2", "model=resnet18", "optim=sgd"});
  in.builtin_recipes_dir = d / "builtin";
  Resolved res = resolve(in);
  CHECK(res.tree.at("model.name").value == "resnet18");
  CHECK(res.tree.at("model.depth").value == 2);  // overrides apply after groups whatever their position
  CHECK(res.tree.at("optim.name").value == "sgd");
  CHECK(res.layers == std::vector<std::string>{r, d / "mine/model/resnet18.toml", d / "builtin/optim/sgd.toml"});

  in.args = {"model=resnet50"};
  CHECK(resolve(in).tree.at("model.name").value == "resnet50");

  // Selected explicitly, an option wins even when the recipe already extends it.
  d.write("mine/r.toml", "extends = \"model/resnet18.toml\"\n[model]\nname = \"mine\"\n");
  CHECK(resolve(input({r})).tree.at("model.name").value == "mine");
  CHECK(resolve(input({r}, {"model=resnet18"})).tree.at("model.name").value == "resnet18");
}

TEST_CASE("a group folder without the option lists the available options", "[unit]") {
  TempDir d;
  std::string r = d.write("r.toml", "x = 1\n");
  d.write("model/resnet18.toml", "");
  d.write("b/model/convnext.toml", "");
  d.write("b/model/readme.md", "");
  ResolveInput in = input({r}, {"model=resnet1", "bad word"});
  in.builtin_recipes_dir = d / "b";
  auto p = problems_of(in);
  REQUIRE(p.size() == 2);
  CHECK_THAT(p[1], Catch::Contains("not an override: bad word"));
  CHECK_THAT(p[0], Catch::Contains("no option \"resnet1\" in config group model (available: convnext, resnet18;"));
}

TEST_CASE("a word naming no group folder is a plain override", "[unit]") {
  TempDir d;
  std::string r = d.write("r.toml", "[loss]\nname = \"ce\"\n");
  Resolved res = resolve(input({r}, {"loss=focal", "seed=3"}));
  CHECK(res.tree.at("loss").value == "focal");
  CHECK_FALSE(res.tree.has("loss.name"));
  CHECK(res.tree.at("seed").value == 3);
}

TEST_CASE("environment detection", "[unit]") {
  auto at = [](std::string p) { return [p](const std::string& q) { return q == p; }; };
  CHECK(detect_environment({{"KAGGLE_KERNEL_RUN_TYPE", "Interactive"}}, never) == "kaggle");
  CHECK(detect_environment({}, at("/kaggle/input")) == "kaggle");
  CHECK(detect_environment({{"COLAB_RELEASE_TAG", "release-colab_20240101"}}, never) == "colab");
  CHECK(detect_environment({{"COLAB_GPU", "1"}}, never) == "colab");
  CHECK(detect_environment({{"COLAB_GPU", ""}}, never) == "colab");
  CHECK(detect_environment({{"HOME", "/root"}}, at("/content")) == "local");
  CHECK(detect_environment({{"COLAB_GPU", "1"}, {"KAGGLE_KERNEL_RUN_TYPE", "Batch"}}, never) == "kaggle");
}

TEST_CASE("the env layer goes under the recipe", "[unit]") {
  TempDir d;
  std::string r = d.write("r.toml", "[data]\nroot = \"/mine\"\n");
  d.write("env/kaggle.toml", "[data]\nroot = \"/kaggle/input\"\nworkers = 2\n[out]\ndir = \"/kaggle/working\"\n");
  ResolveInput in = input({r}, {"out.dir=/tmp/o"});
  in.environ = {{"KAGGLE_KERNEL_RUN_TYPE", "Batch"}};
  Resolved res = resolve(in);
  CHECK(res.env_name == "kaggle");
  CHECK(res.env_file == d / "env/kaggle.toml");
  CHECK(res.layers.front() == d / "env/kaggle.toml");
  CHECK(res.tree.at("data.root").value == "/mine");
  CHECK(res.tree.at("data.workers").value == 2);
  CHECK(res.tree.at("data.workers").origin.str() == "env layer kaggle (" + d / "env/kaggle.toml" + ":3:11)");
  CHECK(res.tree.at("out.dir").value == "/tmp/o");
}

TEST_CASE("env=NAME forces a layer, a forced layer that does not exist lists the others", "[unit]") {
  TempDir d;
  std::string r = d.write("r.toml", "x = 1\n");
  d.write("b/env/colab.toml", "where = \"colab\"\n");
  d.write("b/env/kaggle.toml", "where = \"kaggle\"\n");
  ResolveInput in = input({r}, {"env=colab"});
  in.builtin_recipes_dir = d / "b";
  in.environ = {{"KAGGLE_KERNEL_RUN_TYPE", "Batch"}};
  Resolved res = resolve(in);
  CHECK(res.env_name == "colab");
  CHECK(res.tree.at("where").value == "colab");
  CHECK_FALSE(res.tree.has("env"));

  in.args = {"env=lambda"};
  auto p = problems_of(in);
  REQUIRE(p.size() == 1);
  CHECK_THAT(p[0], Catch::Contains("env=lambda"));
  CHECK_THAT(p[0], Catch::Contains("available: colab, kaggle"));

  // Detected, but no layer file: no layer at all.
  in.args = {};
  in.environ = {};
  Resolved local = resolve(in);
  CHECK(local.env_name == "local");
  CHECK(local.env_file.empty());
  CHECK(local.layers == std::vector<std::string>{r});
}

TEST_CASE("overrides set, add, add-or-set and delete", "[unit]") {
  TempDir d;
  std::string r = d.write("r.toml", "[optim]\nlr = 0.1\nname = \"sgd\"\n[optim.inner]\nk = 5\n[data]\nroot = \"/d\"\n");
  Resolved res =
      resolve(input({r}, {"optim.lr=3e-4", "+optim.new=true", "++optim.name=\"adam\"", "++x.y=[1, 2]", "~optim.inner",
                          "data.root=/data/fmnist", "cv.fold=all", "data.note=", "data.augment=[{name = \"hflip\"}]",
                          "optim={name = \"radam\", lr = 1}"}));
  const Tree& t = res.tree;
  CHECK(t.at("optim.name").value == "radam");
  CHECK(t.at("optim.lr").value == 1);
  CHECK_FALSE(t.has("optim.new"));  // the inline table replaced the whole optim table
  CHECK(t.keys_under("optim.inner").empty());
  CHECK(t.at("x.y").value == json::parse("[1, 2]"));
  CHECK(t.at("x.y").extra);
  CHECK(t.at("data.root").value == "/data/fmnist");
  CHECK(t.at("data.root").origin.str() == "command line");
  CHECK(t.at("cv.fold").value == "all");
  CHECK(t.at("data.note").value == "");
  CHECK(t.at("data.augment").value == json::parse(R"([{"name": "hflip"}])"));

  Resolved more = resolve(input({r}, {"+optim.new=0.5", "++optim.lr=1", "optim.new=2"}));
  CHECK(more.tree.at("optim.new").extra);  // still extra after a plain set
  CHECK(more.tree.at("optim.new").value == 2);
  CHECK_FALSE(more.tree.at("optim.lr").extra);
  CHECK(more.tree.at("optim.lr").value.is_number_integer());
}

TEST_CASE("override errors are collected together", "[unit]") {
  TempDir d;
  std::string r = d.write("r.toml", "[optim]\nlr = 0.1\n[data]\nroot = \"/d\"\n");
  auto p = problems_of(input({r}, {"+optim.lr=1", "~optim.missing", "optim..lr=1", "justaword", "~data.root=x",
                                   "+optim=1", "+optim.lr.x=1", "a b=1"}));
  REQUIRE(p.size() == 8);
  CHECK_THAT(p[0], Catch::Contains("bad key \"optim..lr\""));
  CHECK(p[1] == "not an override: justaword (expected key=value, +key=value, ~key or group=option)");
  CHECK_THAT(p[2], Catch::Contains("~data.root=x"));
  CHECK_THAT(p[3], Catch::Contains("bad key \"a b\""));
  CHECK(p[4] == "+optim.lr=1: optim.lr is already set (" + r + ":2:6); use optim.lr=1 to change it");
  CHECK(p[5] == "~optim.missing: nothing is set at optim.missing");
  CHECK_THAT(p[6], Catch::StartsWith("+optim=1: optim is already set"));
  CHECK_THAT(p[7], Catch::Contains("optim.lr is a value, not a table"));
}

TEST_CASE("interpolation runs after overrides and consults defaults", "[unit]") {
  TempDir d;
  std::string r = d.write("r.toml",
                          "[data]\nroot = \"/d\"\ntrain = \"${data.root}/train.csv\"\n"
                          "[out]\ndir = \"${env:KG_OUT,runs}/${run.name}\"\n");
  ResolveInput in = input({r}, {"data.root=/data/fmnist"});
  json name = "baseline";
  in.default_of = [&](const std::string& k) -> const json* { return k == "run.name" ? &name : nullptr; };
  Resolved res = resolve(in);
  CHECK(res.tree.at("data.train").value == "/data/fmnist/train.csv");
  CHECK(res.tree.at("data.train").origin.str() == r + ":3:9");
  CHECK(res.tree.at("out.dir").value == "runs/baseline");

  in.default_of = nullptr;
  in.default_of_in_tree = [&](const Tree& t, const std::string& k) -> const json* {
    return k == "run.name" && t.has("data.root") ? &name : nullptr;
  };
  CHECK(resolve(in).tree.at("out.dir").value == "runs/baseline");

  in.default_of_in_tree = nullptr;
  in.args = {"data.root=${nope}", "justaword"};
  auto p = problems_of(in);
  REQUIRE(p.size() == 3);
  CHECK_THAT(p[0], Catch::Contains("not an override: justaword"));
  CHECK(p[1] == "data.root: ${nope} refers to an unknown key (command line)");
  CHECK_THAT(p[2], Catch::Contains("${run.name} refers to an unknown key"));
}

}  // namespace KG_UNITY_ID
}  // namespace
