#include <catch2/catch.hpp>

#include "config/resolve.h"
#include "config/tree.h"
#include "core/error.h"

namespace {
namespace KG_UNITY_ID {  // each test file's own names in a unity batch (CMakeLists.txt)

using namespace kg::config;

namespace {
Entry leaf(json v) { return Entry{std::move(v), Origin::defaults(), {}, false}; }
}  // namespace

TEST_CASE("Origin::str spells each kind", "[unit]") {
  CHECK(Origin::at("recipes/x.toml", 7, 14).str() == "recipes/x.toml:7:14");
  CHECK(Origin::command_line().str() == "command line");
  CHECK(Origin::defaults().str() == "default");
  Origin env = Origin::at("recipes/env/kaggle.toml", 3, 1);
  env.kind = Origin::Kind::EnvLayer;
  env.layer = "kaggle";
  CHECK(env.str() == "env layer kaggle (recipes/env/kaggle.toml:3:1)");
}

TEST_CASE("Tree::set replaces a prefix leaf and the leaves below", "[unit]") {
  Tree t;
  t.set("a", leaf(1));
  t.set("a.b", leaf(2));
  CHECK_FALSE(t.has("a"));
  CHECK(t.at("a.b").value == 2);

  t.set("a.c.d", leaf(3));
  t.set("ab", leaf(4));  // shares a prefix but is not below a
  t.set("a", leaf(5));
  CHECK(t.keys_under("a").empty());
  CHECK(t.at("a").value == 5);
  CHECK(t.at("ab").value == 4);
}

TEST_CASE("Tree::erase removes the key and everything below it only", "[unit]") {
  Tree t;
  t.set("optim.lr", leaf(0.1));
  t.set("optim.inner.name", leaf("radam"));
  t.set("optim.inner.lr", leaf(0.2));
  t.set("optimizer", leaf(1));
  CHECK(t.erase("optim.inner") == 2);
  CHECK(t.has("optim.lr"));
  CHECK(t.erase("optim") == 1);
  CHECK(t.has("optimizer"));
  CHECK(t.erase("missing") == 0);
}

TEST_CASE("Tree::keys_under lists direct and nested leaves", "[unit]") {
  Tree t;
  t.set("optim.lr", leaf(1));
  t.set("optim.inner.name", leaf("x"));
  t.set("optim_extra", leaf(1));
  t.set("model.name", leaf("m"));
  CHECK(t.keys_under("optim") == std::vector<std::string>{"optim.inner.name", "optim.lr"});
  CHECK(t.keys_under("optim.inner") == std::vector<std::string>{"optim.inner.name"});
  CHECK(t.keys_under("optim.lr").empty());
}

TEST_CASE("Tree::at throws InternalError for a missing key", "[unit]") {
  Tree t;
  CHECK_THROWS_AS(t.at("nope"), kg::InternalError);
  CHECK(t.find("nope") == nullptr);
}

TEST_CASE("Tree::merge deep-merges tables and replaces arrays", "[unit]") {
  Tree base = parse_toml_string(R"(
[optim]
name = "adamw"
lr = 0.001
[optim.inner]
k = 5
[data]
augment = [{name = "hflip"}, {name = "pad_crop", pad = 4}]
size = [28, 28]
)",
                                "base.toml");
  Tree top = parse_toml_string(R"(
[optim]
lr = 0.01
[optim.inner]
alpha = 0.5
[[data.augment]]
name = "rotate"
)",
                               "top.toml");
  base.merge(top);
  CHECK(base.at("optim.name").value == "adamw");
  CHECK(base.at("optim.lr").value == 0.01);
  CHECK(base.at("optim.lr").origin.file == "top.toml");
  CHECK(base.at("optim.inner.k").value == 5);
  CHECK(base.at("optim.inner.alpha").value == 0.5);
  CHECK(base.at("data.augment").value == json::parse(R"([{"name": "rotate"}])"));
  CHECK(base.at("data.size").value == json::parse("[28, 28]"));
  // The replaced array's element origins go with it.
  CHECK(base.at("data.augment").inner.count("[1]") == 0);
}

}  // namespace KG_UNITY_ID
}  // namespace
