// Registry conformance: every registered component builds from its own documented example and does
// one unit of work; unknown names list the known ones.
#include <catch2/catch.hpp>

#include <torch/torch.h>

#include "config/registry.h"
#include "config/resolve.h"
#include "config/sections.h"
#include "config/validate.h"
#include "core/error.h"
#include "core/random.h"
#include "data/source.h"
#include "data/transform.h"
#include "loss/loss.h"
#include "metric/metric.h"
#include "model/model.h"
#include "model/text/text_network.h"
#include "optim/optimizer.h"
#include "optim/schedule.h"
#include "support/temp_dir.h"
#include "support/text_models.h"
#include "test_paths.h"
#include "train/callback.h"
#include "tta/view.h"

namespace {
namespace KG_UNITY_ID {  // each test file's own names in a unity batch (CMakeLists.txt)

namespace {

kg::config::Recipe example_recipe(const kg::ComponentInfo& c) {
  return kg::config::Recipe::validate(kg::config::parse_toml_string(c.example, c.name + " example"));
}

void exercise(const std::string& kind, const kg::ComponentInfo& c) {
  INFO(kind << " " << c.name << " example:\n" << c.example);
  auto recipe = example_recipe(c);
  torch::manual_seed(0);
  if (kind == "model") {
    // torchscript's example names the user's file; here it runs the 3-channel test fixture.
    if (c.name == "torchscript")
      recipe = recipe.with({{"model.path", KGTRAIN_SOURCE_DIR "/tests/golden/tiny_traced.pt"}}, {});
    if (kg::model::is_text_model(c.name)) {  // its example names a Hugging Face folder: here a tiny one of its family
      kg::test::TempDir dir;
      recipe = recipe.with({{"model.pretrained", kg::test::write_tiny_text_model(dir / c.name, c.name)}}, {});
      kg::model::ModelContext ctx;
      ctx.num_outputs = 5;
      ctx.seq_len = 8;
      auto net = kg::model::build(recipe, ctx);
      CHECK(net->forward(kg::model::dummy_inputs(ctx, 2, torch::kCPU)).sizes() == torch::IntArrayRef({2, 5}));
      return;
    }
    auto net = kg::model::build(recipe, {3, 5});
    auto y = net->forward(torch::randn({2, 3, 32, 32}));
    CHECK(y.sizes() == torch::IntArrayRef({2, 5}));
  } else if (kind == "optimizer") {
    auto net = kg::model::build(
        kg::config::Recipe::validate(kg::config::parse_toml_string("[model]\nwidth = 2\n", "m")), {1, 2});
    auto opt = kg::optim::build(recipe, *net);
    auto before = net->parameters()[0].clone();
    opt->zero_grad();
    net->forward(torch::randn({2, 1, 16, 16})).sum().backward();
    opt->set_lr(0.1);
    opt->set_momentum(0.9);
    opt->step();
    CHECK_FALSE(torch::equal(before, net->parameters()[0]));
  } else if (kind == "schedule") {
    auto s = kg::optim::build_schedule(recipe, {0.1, 100, 10});
    for (int64_t i = 0; i < 100; ++i) CHECK(std::isfinite(s->lr_at(i)));
  } else if (kind == "loss" || kind == "metric") {
    // Each on the first task it supports, with targets of that task's form.
    const auto& tasks = kind == "loss" ? kg::loss::supported_tasks(c.name) : kg::metric::supported_tasks(c.name);
    REQUIRE_FALSE(tasks.empty());
    const kg::Task task = tasks.front();
    const int64_t k = task == kg::Task::binary || task == kg::Task::regression ? 1 : 3;
    auto cells =
        torch::tensor({1.f, 0.f, 1.f, 0.f, 1.f, 0.f, 0.f, 1.f, 1.f, 1.f, 0.f, 0.f}).slice(0, 0, 4 * k).view({4, k});
    auto targets =
        task == kg::Task::multiclass ? torch::tensor({0, 1, 2, 1}) : cells + (task == kg::Task::regression ? 2 : 0);
    if (kind == "loss") {
      auto v = kg::loss::build(recipe, {k, task})->forward(torch::randn({4, k}), targets);
      CHECK(v.dim() == 0);
      CHECK(std::isfinite(v.item<double>()));
    } else {
      auto m = kg::metric::create(c.name, {k, task});
      m->update(kg::metric::activate(torch::randn({4, k}), task), targets);
      CHECK(std::isfinite(m->compute()));
    }
  } else if (kind == "transform") {
    kg::data::ImageGeometry g{16, 16, 3};
    kg::config::json list = recipe.tree().at("data.augment").value;
    kg::data::Pipeline p(list, g, true);
    CHECK(p.size() == list.size());
    cv::Mat img(16, 16, CV_8UC3, cv::Scalar(10, 20, 30));
    std::vector<float> out(3 * 16 * 16);
    kg::Rng rng(1);
    p.process(img, rng, out.data());
    for (float v : out) CHECK(std::isfinite(v));
  } else if (kind == "source") {
    // Sources read files; their behaviour is tested in tests/data/test_sources.cpp and test_pack.cpp.
    CHECK(recipe.tree().at("data.format").value.get<std::string>() == c.name);
    CHECK(kg::data::source_registry().create(c.name, kg::config::Options(kg::config::json::object(), "data")) !=
          nullptr);
  } else if (kind == "callback") {
    // The example enables the callback: the factory must then build it (the loop's behaviour is
    // tested in tests/train/).
    auto cb = kg::train::callback_registry().create(c.name, recipe.section(c.name), recipe);
    REQUIRE(cb != nullptr);
    CHECK(cb->name() == c.name);
  } else if (kind == "tta_view") {
    auto v = kg::tta::build_views(recipe, kg::data::ImageGeometry{16, 16, 3});
    REQUIRE_FALSE(v.empty());
    CHECK(v.back()->name() == c.name);
    auto x = torch::randn({2, 3, 16, 16});
    for (int64_t i = 0; i < v.back()->count(); ++i) CHECK(torch::isfinite(v.back()->apply(x, i)).all().item<bool>());
  } else {
    FAIL("no conformance check for registry kind " << kind << ": add one here");
  }
}

}  // namespace

TEST_CASE("no duplicate registrations and every section points at a real registry", "[unit][registry]") {
  CHECK_NOTHROW(kg::RegistryBase::check_all());
  CHECK_NOTHROW(kg::config::check_sections());
  for (auto kind : {"model", "optimizer", "schedule", "loss", "metric", "transform"})
    CHECK(kg::RegistryBase::by_kind(kind));
}

TEST_CASE("every component builds from its example and works", "[unit][registry]") {
  for (auto& [kind, reg] : kg::RegistryBase::all())
    for (auto* c : reg->components()) {
      CHECK_FALSE(c->doc.empty());
      CHECK_FALSE(c->example.empty());
      for (auto& k : c->schema) CHECK_FALSE(k.doc.empty());
      exercise(kind, *c);
    }
}

TEST_CASE("an unknown component name lists the known ones", "[unit][registry]") {
  try {
    kg::model::model_registry().create("resnet1000", kg::config::Options(kg::config::json::object(), "model"), {3, 2});
    FAIL("no error");
  } catch (const kg::ConfigError& e) {
    std::string m = e.what();
    CHECK(m.find("unknown model \"resnet1000\"") != std::string::npos);
    CHECK(m.find("known: ") != std::string::npos);
    CHECK(m.find("resnet9") != std::string::npos);
  }
}

}  // namespace KG_UNITY_ID
}  // namespace
