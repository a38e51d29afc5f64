#include <cmath>

#include <catch2/catch.hpp>

#include "config/resolve.h"
#include "core/error.h"
#include "support/temp_dir.h"

namespace {
namespace KG_UNITY_ID {  // each test file's own names in a unity batch (CMakeLists.txt)

using namespace kg::config;

namespace {
std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const kg::ConfigError& e) {
    return e.what();
  }
  return "(no ConfigError)";
}
}  // namespace

TEST_CASE("TOML tables become dotted leaves with typed values", "[unit]") {
  Tree t = parse_toml_string(R"(
seed = 7
[optim]
name = "lookahead"
lr = 3e-4
nesterov = true
[optim.inner]
name = "radam"
[data]
image_size = [28, 28]
cache = { enabled = false }
)",
                             "x.toml");
  CHECK(t.at("seed").value.is_number_integer());
  CHECK(t.at("optim.name").value == "lookahead");
  CHECK(t.at("optim.lr").value.is_number_float());
  CHECK(t.at("optim.lr").value.get<double>() == Approx(3e-4));
  CHECK(t.at("optim.nesterov").value == true);
  CHECK(t.at("optim.inner.name").value == "radam");
  CHECK(t.at("data.image_size").value == json::parse("[28, 28]"));
  CHECK(t.at("data.cache.enabled").value == false);
  CHECK(t.entries().size() == 7);
}

TEST_CASE("values record file:line:column, array elements and element keys too", "[unit]") {
  Tree t = parse_toml_string(
      "[optim]\nlr = 0.1\n\n[[data.augment]]\nname = \"hflip\"\n\n[[data.augment]]\n"
      "name = \"pad_crop\"\n  p = 0.5\nlist = [1,\n  2]\n",
      "recipes/x.toml");
  CHECK(t.at("optim.lr").origin.str() == "recipes/x.toml:2:6");
  const Entry& aug = t.at("data.augment");
  REQUIRE(aug.value.size() == 2);
  CHECK(aug.inner.at("[1]").line == 7);
  CHECK(aug.inner.at("[1].name").str() == "recipes/x.toml:8:8");
  CHECK(aug.inner.at("[1].p").str() == "recipes/x.toml:9:7");
  CHECK(t.at("data.augment").value[1]["p"] == 0.5);
  // Keys after a [[...]] header belong to that element, nested arrays included.
  CHECK(aug.inner.at("[1].list[1]").str() == "recipes/x.toml:11:3");

  Tree u = parse_toml_string("aug = [{name = \"a\"}, {name = \"b\", p = 0.3}]\n", "y.toml");
  CHECK(u.at("aug").inner.at("[1].p").str() == "y.toml:1:39");
}

TEST_CASE("TOML syntax errors cite path:line:col", "[unit]") {
  std::string msg = error_of([] { parse_toml_string("a = 1\nb = = 2\n", "recipes/bad.toml"); });
  CHECK_THAT(msg, Catch::StartsWith("recipe error: recipes/bad.toml:2:"));
  CHECK(msg.size() > std::string("recipe error: recipes/bad.toml:2:5: ").size());
}

TEST_CASE("keys that are not dotted names and dates are rejected with positions", "[unit]") {
  std::string msg = error_of([] { parse_toml_string("\"a b\" = 1\nwhen = 2024-01-01\n", "x.toml"); });
  CHECK_THAT(msg, Catch::Contains("x.toml:1:9: bad key \"a b\""));
  CHECK_THAT(msg, Catch::Contains("x.toml:2:8: dates and times are not supported"));
}

TEST_CASE("parse_toml_file reads a file and reports an unreadable one as DataError", "[unit]") {
  kg::test::TempDir dir;
  std::string p = dir.write("r.toml", "[train]\nepochs = 3\n");
  Tree t = parse_toml_file(p);
  CHECK(t.at("train.epochs").value == 3);
  CHECK(t.at("train.epochs").origin.str() == p + ":2:10");
  CHECK_THROWS_AS(parse_toml_file(dir / "missing.toml"), kg::DataError);
}

TEST_CASE("override values parse as TOML, else stay verbatim strings", "[unit]") {
  CHECK(parse_override_value("3e-4").is_number_float());
  CHECK(parse_override_value("3e-4").get<double>() == Approx(3e-4));
  CHECK(parse_override_value("0.5").get<double>() == 0.5);
  CHECK(parse_override_value("1_000") == 1000);
  CHECK(parse_override_value("1_000").is_number_integer());
  CHECK(parse_override_value("true") == true);
  CHECK(parse_override_value("[1, 2]") == json::parse("[1, 2]"));
  CHECK(parse_override_value("\"s\"") == "s");
  CHECK(parse_override_value("[{name = \"hflip\"}, {name = \"rotate\", deg = 10}]") ==
        json::parse(R"([{"name": "hflip"}, {"name": "rotate", "deg": 10}])"));
  CHECK(parse_override_value("/data/fmnist") == "/data/fmnist");
  CHECK(parse_override_value("all") == "all");
  CHECK(parse_override_value("") == "");
  CHECK(parse_override_value("1.2.3") == "1.2.3");
  CHECK(parse_override_value("2024-01-01") == "2024-01-01");
  CHECK(parse_override_value("1\nb = 2") == "1\nb = 2");
  CHECK(std::isinf(parse_override_value("-inf").get<double>()));
}

TEST_CASE("to_toml_value spells values as TOML", "[unit]") {
  CHECK(to_toml_value(0.001) == "0.001");
  CHECK(to_toml_value(1e-05) == "1e-05");
  CHECK(to_toml_value(3.0) == "3.0");
  CHECK(to_toml_value(-0.0) == "-0.0");
  CHECK(to_toml_value(1e300) == "1e+300");
  CHECK(to_toml_value(std::numeric_limits<double>::infinity()) == "inf");
  CHECK(to_toml_value(-std::numeric_limits<double>::infinity()) == "-inf");
  CHECK(to_toml_value(std::nan("")) == "nan");
  CHECK(to_toml_value(42) == "42");
  CHECK(to_toml_value(false) == "false");
  CHECK(to_toml_value("a \"q\"\\\n\x01") == "\"a \\\"q\\\"\\\\\\n\\u0001\"");
  CHECK(to_toml_value(json::parse("[1, 2]")) == "[1, 2]");
  CHECK(to_toml_value(json::parse(R"({"name": "hflip", "p": 0.5})")) == "{ name = \"hflip\", p = 0.5 }");
  CHECK(to_toml_value(json::parse(R"({"a b": 1})")) == "{ \"a b\" = 1 }");
  CHECK(to_toml_value(json::parse("[]")) == "[]");
}

TEST_CASE("to_toml writes flat sorted keys grouped by table, with origins when asked", "[unit]") {
  Tree t = parse_toml_string("seed = 1\nname = \"x\"\n[optim]\nlr = 0.001\nname = \"adamw\"\n[data]\nsize = [28, 28]\n",
                             "r.toml");
  t.set("optim.wd", Entry{json(1e-05), Origin::command_line(), {}, false});
  CHECK(to_toml(t, false) ==
        "name = \"x\"\nseed = 1\n\n"
        "data.size = [28, 28]\n\n"
        "optim.lr = 0.001\noptim.name = \"adamw\"\noptim.wd = 1e-05\n");
  std::string annotated = to_toml(t, true);
  CHECK_THAT(annotated, Catch::Contains("optim.lr = 0.001  # r.toml:4:6\n"));
  CHECK_THAT(annotated, Catch::Contains("optim.wd = 1e-05  # command line\n"));
}

TEST_CASE("to_toml output parses back to an equal tree", "[unit]") {
  Tree t = parse_toml_string(R"(
seed = -3
big = 9007199254740993
name = "tab\there \"quoted\" back\\slash ünï"
[optim]
lr = 0.001
wd = 1e-05
momentum = 3.0
clip = inf
low = -inf
tiny = 5e-324
flags = [true, false]
[[data.augment]]
name = "hflip"
p = 0.5
[[data.augment]]
name = "pad_crop"
sizes = [[1, 2], [3]]
opts = { mode = "reflect", "odd key" = 1 }
[data]
empty = []
)",
                             "r.toml");
  for (bool annotate : {false, true}) {
    std::string text = to_toml(t, annotate);
    Tree back = parse_toml_string(text, "out.toml");
    REQUIRE(back.entries().size() == t.entries().size());
    for (const auto& [key, e] : t.entries()) {
      INFO(key << "\n" << text);
      REQUIRE(back.has(key));
      CHECK(back.at(key).value == e.value);
      CHECK(back.at(key).value.type() == e.value.type());
    }
  }
  Tree n;
  n.set("x", Entry{json(std::nan("")), Origin::defaults(), {}, false});
  CHECK(std::isnan(parse_toml_string(to_toml(n, true), "n.toml").at("x").value.get<double>()));
}

TEST_CASE("a control character in a recipe is a recipe error at its line and column, before toml++ sees it", "[unit]") {
  // toml++ 3.3 asserted on a NUL inside a table header (tests/fuzz/regressions/recipe).
  std::string msg = error_of([] { parse_toml_string(std::string("a = 1\n[tr\0ain]\n", 15), "r.toml"); });
  CHECK_THAT(msg, Catch::Contains("r.toml:2:4: control character U+0000 is not allowed in TOML"));
  msg = error_of([] { parse_toml_string("x = \"bell\x07\"\n", "r.toml"); });
  CHECK_THAT(msg, Catch::Contains("r.toml:1:10: control character U+0007"));
  CHECK_THAT(msg, Catch::Contains("\\u0007"));
  // Tab, LF and CRLF are TOML's own whitespace; an override value with a control character is a plain string.
  CHECK(parse_toml_string("a\t= 1\r\nb = 2\n", "r.toml").at("b").value == 2);
  CHECK(parse_override_value(std::string("a\x01z")) == "a\x01z");
}

TEST_CASE("deeply nested TOML is refused with a position, not a stack overflow", "[unit]") {
  const std::string deep = "a = " + std::string(100000, '[') + std::string(100000, ']') + "\n";
  CHECK_THAT(error_of([&] { parse_toml_string(deep, "deep.toml"); }), Catch::StartsWith("recipe error: deep.toml:1:"));
  std::string tables = "a = ";
  for (int i = 0; i < 100000; ++i) tables += "{b = ";
  tables += "1" + std::string(100000, '}') + "\n";
  CHECK_THAT(error_of([&] { parse_toml_string(tables, "deep.toml"); }),
             Catch::StartsWith("recipe error: deep.toml:1:"));
}

TEST_CASE("a key of more than 64 dotted parts is refused before toml++ parses it", "[unit]") {
  // toml++ and the reader recurse per part: a million parts overflowed the stack (scripts/reliability_hostile.py).
  std::string parts = "a";
  for (int i = 1; i < 1000000; ++i) parts += ".a";
  CHECK_THAT(error_of([&] { parse_toml_string(parts + " = 1\n", "k.toml"); }),
             Catch::Contains("k.toml: a key or table name of more than 64 dotted parts"));
  CHECK_THAT(error_of([&] { parse_toml_string("[" + parts + "]\nx = 1\n", "k.toml"); }),
             Catch::Contains("more than 64 dotted parts"));
  std::string at_limit = "a";
  for (int i = 1; i < 64; ++i) at_limit += ".a";
  CHECK(parse_toml_string(at_limit + " = 1\n", "k.toml").at(at_limit).value == 1);
  // Dots inside strings, comments and values are not key parts.
  const std::string dots(200, '.');
  CHECK(parse_toml_string("# " + dots + "\nb = \"" + dots + "\"\nc = '''\n" + dots + "'''\nd = [1.5, 2.5]\n", "k.toml")
            .at("b")
            .value == dots);
  CHECK(parse_override_value(parts) == parts);  // a plain string, as any text that is not one TOML value
}

TEST_CASE("an override or environment variable that is not UTF-8 is a recipe error, not a crash", "[unit]") {
  // A non-UTF-8 byte reached nlohmann::json's dump in a validation message and threw type_error 316 (tests/fuzz).
  kg::test::TempDir dir;
  ResolveInput in;
  in.recipe_files = {dir.write("r.toml", "[run]\nname = \"${env:NAME,x}\"\n")};
  in.args = {"run.tag=ok\xF6"};
  in.path_exists = [](const std::string&) { return false; };
  CHECK_THAT(error_of([&] { resolve(in); }),
             Catch::Contains("the override starting \"run.tag=ok\" is not UTF-8 text (byte 0xF6 at position 11)"));
  in.args.clear();
  in.environ = {{"NAME", "caf\xE9"}};
  CHECK_THAT(error_of([&] { resolve(in); }), Catch::Contains("environment variable NAME is not UTF-8 text"));
}

TEST_CASE("non-ASCII text outside strings and comments is refused before toml++ sees it", "[unit]") {
  // toml++ 3.3's whitespace test reached __builtin_unreachable on U+FEFC there (tests/fuzz/regressions/recipe).
  CHECK_THAT(error_of([] { parse_toml_string("\xEF\xBB\xBC[run]\nname = \"x\"\n", "u.toml"); }),
             Catch::Contains("u.toml:1:1: a non-ASCII character outside a string or comment"));
  CHECK_THAT(error_of([] { parse_toml_string("[run]\nn\xC3\xA9 = 1\n", "u.toml"); }), Catch::Contains("u.toml:2:2:"));
  // In strings and comments, and after a byte-order mark, it is text like any other.
  auto t = parse_toml_string("\xEF\xBB\xBF# caf\xC3\xA9\n[run]\nname = \"caf\xC3\xA9 \xEF\xBB\xBC\"\n", "u.toml");
  CHECK(t.at("run.name").value == "caf\xC3\xA9 \xEF\xBB\xBC");
  CHECK(parse_override_value("caf\xC3\xA9") == "caf\xC3\xA9");  // a plain string, never parsed by toml++
}

}  // namespace KG_UNITY_ID
}  // namespace
