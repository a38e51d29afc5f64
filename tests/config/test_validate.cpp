// The strict schema: unknown keys with suggestions and positions, types, ranges, components.
#include <catch2/catch.hpp>

#include "config/resolve.h"
#include "config/validate.h"
#include "core/error.h"
#include "support/fixtures.h"

using kg::config::validate;

namespace {
kg::config::Tree parse(const std::string& text) { return kg::config::parse_toml_string(text, "r.toml"); }

std::string problems_of(const std::string& text) {
  try {
    validate(parse(text));
  } catch (const kg::ConfigError& e) {
    return e.what();
  }
  return "";
}
}  // namespace

TEST_CASE("validate fills defaults for sections and the selected components", "[unit][config]") {
  auto v = validate(parse("[model]\nname = \"resnet9\"\n"));
  CHECK(v.tree.at("model.width").value == 64);
  CHECK(v.tree.at("optim.lr").value == Approx(1e-3));
  CHECK(v.tree.at("optim.betas").value.size() == 2);  // adamw, the default optimizer
  CHECK(v.tree.at("schedule.pct_start").value == Approx(0.25));
  CHECK(v.tree.at("model.width").origin.str() == "default");
  CHECK(v.warnings.empty());
}

TEST_CASE("unknown keys are errors with position and suggestion", "[unit][config]") {
  auto msg = problems_of("[optim]\nlrr = 0.1\n[model]\nwidht = 3\n[trian]\nepochs = 1\n");
  CHECK(msg.find("3 recipe errors") != std::string::npos);  // all at once
  CHECK(msg.find("optim.lrr: unknown key (r.toml:2:7)") != std::string::npos);
  CHECK(msg.find("did you mean optim.lr") != std::string::npos);
  CHECK(msg.find("model.widht") != std::string::npos);
  CHECK(msg.find("did you mean model.width") != std::string::npos);
  CHECK(msg.find("trian.epochs") != std::string::npos);
  CHECK(msg.find("did you mean train.epochs") != std::string::npos);
}

TEST_CASE("types, ranges and choices are checked", "[unit][config]") {
  CHECK(problems_of("[optim]\nlr = -1.0\n").find("optim.lr: expected a number > 0, got -1.0") != std::string::npos);
  CHECK(problems_of("[train]\nepochs = \"ten\"\n").find("train.epochs: expected an integer, got \"ten\"") != std::string::npos);
  CHECK(problems_of("[schedule]\nanneal = \"coss\"\n").find("did you mean cos") != std::string::npos);
  CHECK(problems_of("[data]\nimage_size = [0, 28]\n").find("data.image_size") != std::string::npos);
  CHECK(problems_of("[data]\nchannels = 2\n").find("expected 1 or 3") != std::string::npos);
  CHECK(problems_of("[optim]\nlr = 1\n").empty());  // an integer is a fine float
  CHECK(problems_of("[device]\nname = \"cuda:1\"\n").empty());
  CHECK(problems_of("[device]\nname = \"gpu\"\n").find("expected auto, cpu, cuda or cuda:N") != std::string::npos);
}

TEST_CASE("component names and component tables are checked", "[unit][config]") {
  auto msg = problems_of("[model]\nname = \"resnt9\"\n");
  CHECK(msg.find("unknown model \"resnt9\"") != std::string::npos);
  CHECK(msg.find("did you mean resnet9") != std::string::npos);
  msg = problems_of("[data]\naugment = [\n  { name = \"hflip\" },\n  { name = \"hflip\", pp = 0.3 },\n  { name = \"flop\" },\n]\n");
  CHECK(msg.find("data.augment[1].pp: unknown key for transform hflip (r.toml:4:") != std::string::npos);
  CHECK(msg.find("data.augment[2].name: unknown transform \"flop\"") != std::string::npos);
  CHECK(problems_of("[data]\naugment = [{ name = \"hflip\", p = 2.0 }]\n").find("data.augment[0].p: expected a number in [0, 1]") !=
        std::string::npos);
}

TEST_CASE("a key of another component of the same kind is a warning", "[unit][config]") {
  auto v = validate(parse("[schedule]\nname = \"constant\"\npct_start = 0.3\n"));
  REQUIRE(v.warnings.size() == 1);
  CHECK(v.warnings[0].find("schedule.pct_start") != std::string::npos);
  CHECK(v.warnings[0].find("one_cycle") != std::string::npos);
  CHECK(v.warnings[0].find("constant") != std::string::npos);
}

TEST_CASE("keys added with + skip the schema", "[unit][config]") {
  kg::test::TempDir dir;
  auto r = dir.write("r.toml", "[model]\nwidth = 8\n");
  auto tree = kg::test::resolve_recipe({r}, {"+model.extra_thing=3"});
  CHECK(tree.at("model.extra_thing").extra);
  CHECK_THROWS_AS(kg::test::resolve_recipe({r}, {"model.extra_thing=3"}), kg::ConfigError);
}
