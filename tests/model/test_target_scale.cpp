// Regression output scale (model/target_scale.h): data.target_transform's fitted shift/scale and fastai's
// y_range, on their own and inside a network (state-dict names, classification refused).
#include <catch2/catch.hpp>

#include <cmath>

#include <torch/torch.h>

#include "core/error.h"
#include "model/model.h"
#include "model/target_scale.h"

namespace {
namespace KG_UNITY_ID {  // each test file's own names in a unity batch (CMakeLists.txt)

namespace {

struct Owner : torch::nn::Module {};

at::Tensor col(std::vector<float> v) { return torch::tensor(v).reshape({static_cast<int64_t>(v.size()), 1}); }

kg::model::NetworkPtr tiny_net(bool regression, const std::string& transform, std::vector<double> y_range = {}) {
  kg::model::ModelContext ctx;
  ctx.in_chans = 1;
  ctx.num_outputs = 2;
  ctx.height = ctx.width = 12;
  ctx.regression = regression;
  ctx.target_transform = transform;
  ctx.model.name = "resnet9";
  ctx.model.y_range = std::move(y_range);
  kg::config::Recipe recipe;
  kg::config::Options opts = recipe.section("model");
  return kg::model::model_registry().create("resnet9", opts, ctx);
}

}  // namespace

TEST_CASE("target scale: standardize and log1p fit the training targets and map the output back", "[unit][model]") {
  Owner owner;
  SECTION("none without y_range is the identity and adds no buffers") {
    kg::model::TargetScale ts;
    ts.build(owner, "none", {}, 1);
    CHECK_FALSE(ts.active());
    CHECK(owner.named_buffers().size() == 0);
    auto z = col({-3.f, 0.f, 2.f});
    CHECK(torch::equal(ts.forward(z), z));
  }
  SECTION("standardize: shift = mean, scale = population std; output z * std + mean") {
    kg::model::TargetScale ts;
    ts.build(owner, "standardize", {}, 1);
    ts.fit(col({100.f, 200.f, 300.f, 400.f}));
    auto b = owner.named_buffers();
    REQUIRE(b.contains("target_shift"));
    CHECK(b["target_shift"].item<double>() == Approx(250.0));
    CHECK(b["target_scale"].item<double>() == Approx(std::sqrt(12500.0)));
    auto y = ts.forward(col({0.f, 1.f}));
    CHECK(y[0][0].item<double>() == Approx(250.0));  // an untrained head (z ~ 0) starts at the mean
    CHECK(y[1][0].item<double>() == Approx(250.0 + std::sqrt(12500.0)));
    CHECK(ts.describe().find("standardize (shift 250") == 0);
  }
  SECTION("log1p: statistics of log1p(y); output expm1(z * scale + shift), finite for a wild z") {
    kg::model::TargetScale ts;
    ts.build(owner, "log1p", {}, 1);
    ts.fit(col({9.f, 99.f, 999.f}));
    const double m = (std::log(10.0) + std::log(100.0) + std::log(1000.0)) / 3;
    auto y = ts.forward(col({0.f, 1e6f}));
    CHECK(y[0][0].item<double>() == Approx(std::expm1(m)).epsilon(1e-5));  // the geometric mean, less one
    CHECK(std::isfinite(y[1][0].item<double>()));
  }
  SECTION("a constant target keeps scale 1") {
    kg::model::TargetScale ts;
    ts.build(owner, "standardize", {}, 2);
    ts.fit(torch::tensor({5.f, 1.f, 5.f, 2.f}).reshape({2, 2}));
    auto b = owner.named_buffers();
    CHECK(b["target_scale"][0].item<double>() == 1.0);
    CHECK(b["target_scale"][1].item<double>() == Approx(0.5));
  }
}

TEST_CASE("target scale: y_range bounds the output in target units, with or without a transform", "[unit][model]") {
  Owner owner;
  const std::vector<double> range{10.0, 1000.0};
  auto z = col({-1e4f, 0.f, 1e4f});
  SECTION("fastai's SigmoidRange") {
    kg::model::TargetScale ts;
    ts.build(owner, "none", range, 1);
    CHECK(ts.active());
    auto y = ts.forward(z);
    CHECK(y[0][0].item<double>() == Approx(10.0));
    CHECK(y[1][0].item<double>() == Approx(505.0));
    CHECK(y[2][0].item<double>() == Approx(1000.0));
  }
  SECTION("log1p: the sigmoid spans log1p(low)..log1p(high)") {
    kg::model::TargetScale ts;
    ts.build(owner, "log1p", range, 1);
    ts.fit(col({50.f, 60.f}));  // fitted, but the range decides
    auto y = ts.forward(z);
    CHECK(y[0][0].item<double>() == Approx(10.0).epsilon(1e-5));
    CHECK(y[1][0].item<double>() == Approx(std::expm1(0.5 * (std::log(11.0) + std::log(1001.0)))).epsilon(1e-5));
    CHECK(y[2][0].item<double>() == Approx(1000.0).epsilon(1e-5));
  }
  SECTION("bad ranges and transforms are refused") {
    kg::model::TargetScale a, b, c;
    CHECK_THROWS_AS(a.build(owner, "sqrt", {}, 1), kg::ConfigError);
    CHECK_THROWS_AS(b.build(owner, "none", {5.0, 5.0}, 1), kg::ConfigError);
    CHECK_THROWS_WITH(c.build(owner, "log1p", {-2.0, 5.0}, 1), Catch::Contains("above -1"));
  }
}

TEST_CASE("target scale in a network: buffers beside the classifier, classification refused", "[unit][model]") {
  SECTION("regression with a transform: target_shift/target_scale in the state dict, part of the head") {
    auto net = tiny_net(true, "standardize");
    auto b = net->named_buffers(true);
    REQUIRE(b.contains("target_shift"));
    CHECK(b["target_shift"].sizes() == std::vector<int64_t>{2});
    CHECK(net->is_head_param("target_scale"));
    net->target_scale().fit(torch::tensor({10.f, 1.f, 30.f, 3.f}).reshape({2, 2}));
    net->eval();
    torch::NoGradGuard ng;
    auto y = net->forward(torch::zeros({4, 1, 12, 12}));
    CHECK(y.sizes() == std::vector<int64_t>{4, 2});
    CHECK(y.mean().item<double>() > 5.0);  // near the fitted means (20, 2), not near 0
  }
  SECTION("no transform: the timm-compatible state dict is unchanged") {
    auto net = tiny_net(true, "none");
    for (auto& b : net->named_buffers(true)) CHECK(b.key().rfind("target_", 0) != 0);
  }
  SECTION("classification tasks refuse both keys") {
    CHECK_THROWS_WITH(tiny_net(false, "log1p"), Catch::Contains("data.target_transform"));
    CHECK_THROWS_WITH(tiny_net(false, "none", {0.0, 1.0}), Catch::Contains("model.y_range"));
  }
}

}  // namespace KG_UNITY_ID
}  // namespace
