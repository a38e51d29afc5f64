// The strict schema: unknown keys with suggestions and positions, types, ranges, components.
#include <catch2/catch.hpp>

#include "config/resolve.h"
#include "config/validate.h"
#include "core/error.h"
#include "support/fixtures.h"

namespace {
namespace KG_UNITY_ID {  // each test file's own names in a unity batch (CMakeLists.txt)

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
  CHECK(problems_of("[train]\nepochs = \"ten\"\n").find("train.epochs: expected an integer, got \"ten\"") !=
        std::string::npos);
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
  msg = problems_of(
      "[data]\naugment = [\n  { name = \"hflip\" },\n  { name = \"hflip\", pp = 0.3 },\n  { name = \"flop\" },\n]\n");
  CHECK(msg.find("data.augment[1].pp: unknown key for transform hflip (r.toml:4:") != std::string::npos);
  CHECK(msg.find("data.augment[2].name: unknown transform \"flop\"") != std::string::npos);
  CHECK(problems_of("[data]\naugment = [{ name = \"hflip\", p = 2.0 }]\n")
            .find("data.augment[0].p: expected a number in [0, 1]") != std::string::npos);
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
  CHECK(tree.tree().at("model.extra_thing").extra);
  CHECK_THROWS_AS(kg::test::resolve_recipe({r}, {"model.extra_thing=3"}), kg::ConfigError);
  // A declared key is validated however it is set: +train.accum_steps=0 used to reach the trainer.
  for (const char* o : {"+train.accum_steps=0", "++train.eval_batch_size=\"abc\"", "+optim.lr=-5", "++optim.lr=-5"})
    CHECK_THROWS_AS(kg::test::resolve_recipe({r}, {o}), kg::ConfigError);
  CHECK(kg::test::resolve_recipe({r}, {"+optim.lr=0.5"}).tree().at("optim.lr").value == 0.5);
}

TEST_CASE("a nested component table is checked against the component it names", "[unit][config]") {
  // lookahead declares inner.name: [optim.inner] holds the wrapped optimizer's own keys.
  auto msg =
      problems_of("[optim]\nname = \"lookahead\"\nk = 5\n\n[optim.inner]\nname = \"radam\"\nbetaz = [0.9, 0.99]\n");
  CHECK(msg.find("optim.inner.betaz: unknown key for optimizer radam (r.toml:7:") != std::string::npos);
  CHECK(msg.find("did you mean optim.inner.betas") != std::string::npos);
  CHECK(problems_of("[optim]\nname = \"lookahead\"\n[optim.inner]\nname = \"radam\"\nbetas = [0.9]\n")
            .find("optim.inner.betas: expected 2 values, got 1 (r.toml:5:") != std::string::npos);
  msg = problems_of("[optim]\nname = \"lookahead\"\n[optim.inner]\nname = \"radm\"\n");
  CHECK(msg.find("optim.inner.name: unknown optimizer \"radm\" (r.toml:4:") != std::string::npos);
  CHECK(msg.find("did you mean radam") != std::string::npos);
  // Nesting a wrapper in a wrapper is refused.
  CHECK(problems_of("[optim]\nname = \"lookahead\"\n[optim.inner]\nname = \"lookahead\"\n").find("cannot be nested") !=
        std::string::npos);
}

TEST_CASE("a nested component's defaults are filled in", "[unit][config]") {
  auto v = validate(parse("[optim]\nname = \"lookahead\"\n[optim.inner]\nname = \"radam\"\neps = 1e-6\n"));
  CHECK(v.tree.at("optim.k").value == 6);
  CHECK(v.tree.at("optim.inner.eps").value == Approx(1e-6));
  CHECK(v.tree.at("optim.inner.eps").origin.str() == "r.toml:5:7");
  CHECK(v.tree.at("optim.inner.betas").value.size() == 2);
  CHECK(v.tree.at("optim.inner.decoupled_weight_decay").value == true);
  CHECK(v.tree.at("optim.inner.betas").origin.str() == "default");
  CHECK_FALSE(v.tree.has("optim.inner.amsgrad"));  // an adamw key, not radam's
  CHECK(v.warnings.empty());
  // Without a table the declared inner default (adamw) and its keys apply.
  v = validate(parse("[optim]\nname = \"lookahead\"\n"));
  CHECK(v.tree.at("optim.inner.name").value == "adamw");
  CHECK(v.tree.at("optim.inner.amsgrad").value == false);
  // Another optimizer's key under [optim.inner] is a warning, as at the section level.
  v = validate(parse("[optim]\nname = \"lookahead\"\n[optim.inner]\nname = \"adamw\"\nmomentum = 0.9\n"));
  REQUIRE(v.warnings.size() == 1);
  CHECK(v.warnings[0].find("optim.inner.momentum") != std::string::npos);
  CHECK(v.warnings[0].find("not of the selected optimizer \"adamw\"") != std::string::npos);
  // [optim.inner] without a lookahead: ignored with a warning.
  v = validate(parse("[optim]\nname = \"adamw\"\n[optim.inner]\nname = \"sgd\"\n"));
  REQUIRE(v.warnings.size() == 1);
  CHECK(v.warnings[0].find("optim.inner.name") != std::string::npos);
  CHECK_FALSE(v.tree.has("optim.inner.momentum"));
}

TEST_CASE("nan and inf are refused for every key, with their TOML spelling", "[unit][config]") {
  // inf passed every `<= max` check: optim.lr = inf trained on nan losses.
  auto msg = problems_of(
      "[optim]\nlr = inf\nweight_decay = inf\n[schedule]\nname = \"cosine\"\nwarmup_epochs = nan\n"
      "[data]\naugment = [{ name = \"affine\", degrees = -inf }]\n");
  CHECK_THAT(msg, Catch::Contains("optim.lr: expected a finite number, got inf (r.toml:2:6)"));
  CHECK_THAT(msg, Catch::Contains("optim.weight_decay: expected a finite number, got inf"));
  CHECK_THAT(msg, Catch::Contains("schedule.warmup_epochs: expected a finite number, got nan"));
  CHECK_THAT(msg, Catch::Contains("data.augment[0].degrees: expected a finite number, got -inf"));
  CHECK_THAT(problems_of("[optim]\nlr = [1e-4, inf]\n"),
             Catch::Contains("optim.lr: expected a finite number, got inf"));
  CHECK(problems_of("[optim]\nlr = 1e-3\nweight_decay = 1e300\n").empty());
}

TEST_CASE("without loss.name the task's default loss is the one validated and filled in", "[unit][config]") {
  // binary trains with bce_with_logits: its pos_weight was called "ignored" yet used, unchecked.
  CHECK_THAT(problems_of("[data]\ntask = \"binary\"\n[loss]\npos_weight = -5.0\n"),
             Catch::Contains("loss.pos_weight: expected"));
  auto v = validate(parse("[data]\ntask = \"binary\"\n[loss]\npos_weight = 2.0\n"));
  CHECK(v.warnings.empty());
  CHECK(v.tree.at("loss.name").value == "bce_with_logits");
  v = validate(parse("[data]\ntask = \"regression\"\n[loss]\nlabel_smoothing = 0.5\n"));
  REQUIRE(v.warnings.size() == 1);
  CHECK_THAT(v.warnings[0], Catch::Contains("not of the selected loss \"mse\": ignored"));
  CHECK(validate(parse("[model]\nwidth = 8\n")).tree.at("loss.name").value == "cross_entropy");
  CHECK(validate(parse("[data]\ntask = \"binary\"\n[loss]\nname = \"focal\"\n")).tree.at("loss.name").value == "focal");
}

TEST_CASE("a section given a value is named as a section, not an unknown key", "[unit][config]") {
  CHECK_THAT(problems_of("train = 3\n"), Catch::Contains("train: is a section of keys, not a value (r.toml:1:9)"));
  CHECK_THAT(problems_of("[[optim]]\nname = \"sgd\"\n"), Catch::Contains("optim: is a section of keys, not a value"));
}

}  // namespace KG_UNITY_ID
}  // namespace
